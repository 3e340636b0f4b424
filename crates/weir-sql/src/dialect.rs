//! The SQL dialect Weir parses: sqlparser's generic dialect, which reads
//! most of Flink's syntax, and Flink's `FOR SYSTEM_TIME AS OF` after a
//! table's name (a temporal join), which the generic dialect does not read.

use std::any::TypeId;

use sqlparser::dialect::{Dialect, GenericDialect};

/// Flink's SQL as Weir reads it: [`GenericDialect`] with table versions.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FlinkDialect;

/// The generic dialect's answers, for each question it answers its own
/// way: the parser asks the dialect, and must hear the same.
macro_rules! as_generic {
    ($($name:ident),* $(,)?) => {
        $(
            fn $name(&self) -> bool {
                GenericDialect.$name()
            }
        )*
    };
}

impl Dialect for FlinkDialect {
    /// The parser's checks by dialect (`dialect_of!`) take this one for
    /// the generic dialect.
    fn dialect(&self) -> TypeId {
        TypeId::of::<GenericDialect>()
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        GenericDialect.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        GenericDialect.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        GenericDialect.is_identifier_part(ch)
    }

    /// `tiers FOR SYSTEM_TIME AS OF o.ts AS t`.
    fn supports_table_versioning(&self) -> bool {
        true
    }

    as_generic!(
        supports_unicode_string_literal,
        supports_partition_by_after_order_by,
        supports_array_join_syntax,
        supports_group_by_expr,
        supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens,
        supports_connect_by,
        supports_match_recognize,
        supports_pipe_operator,
        supports_start_transaction_modifier,
        supports_window_function_null_treatment_arg,
        supports_dictionary_syntax,
        supports_window_clause_named_window_reference,
        supports_parenthesized_set_variables,
        supports_select_wildcard_except,
        support_map_literal_syntax,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_extract_comma_syntax,
        supports_create_view_comment_syntax,
        supports_parens_around_table_factor,
        supports_values_as_table_factor,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_limit_comma,
        supports_update_order_by,
        supports_from_first_select,
        supports_projection_trailing_commas,
        supports_asc_desc_in_column_definition,
        supports_try_convert,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_assignment_operator,
        supports_struct_literal,
        supports_empty_projections,
        supports_nested_comments,
        supports_multiline_comment_hints,
        supports_user_host_grantee,
        supports_string_escape_constant,
        supports_array_typedef_with_brackets,
        supports_match_against,
        supports_set_names,
        supports_comma_separated_set_assignments,
        supports_filter_during_aggregation,
        supports_select_wildcard_exclude,
        supports_data_type_signed_suffix,
        supports_interval_options,
        supports_quote_delimited_string,
        supports_select_wildcard_replace,
        supports_select_wildcard_ilike,
        supports_select_wildcard_rename,
        supports_optimize_table,
        supports_install,
        supports_detach,
        supports_prewhere,
        supports_with_fill,
        supports_limit_by,
        supports_interpolate,
        supports_settings,
        supports_select_format,
        supports_comment_optimizer_hint,
        supports_constraint_keyword_without_name,
        supports_key_column_option,
        supports_comma_separated_trim,
        supports_cte_without_as,
        supports_select_item_multi_column_alias,
        supports_xml_expressions,
    );
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{Statement, TableFactor, TableVersion};
    use sqlparser::parser::Parser;

    use super::*;

    /// Every golden case parses to the same statements as with the
    /// generic dialect: only table versions read differently.
    #[test]
    fn statements_parse_as_the_generic_dialect_parses_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        let mut cases = 0;
        for entry in std::fs::read_dir(&dir).expect("the golden cases") {
            let path = entry.expect("a golden case").path();
            if path.extension().is_none_or(|e| e != "sql") {
                continue;
            }
            let sql = std::fs::read_to_string(&path).expect("readable");
            if sql.contains("SYSTEM_TIME") {
                continue;
            }
            let ours = Parser::parse_sql(&FlinkDialect, &sql);
            let generic = Parser::parse_sql(&GenericDialect, &sql);
            assert_eq!(
                format!("{ours:?}"),
                format!("{generic:?}"),
                "{}",
                path.display()
            );
            cases += 1;
        }
        assert!(cases > 20, "only {cases} golden cases parsed");
    }

    #[test]
    fn a_table_version_is_read() {
        let sql = "SELECT * FROM orders AS o JOIN tiers FOR SYSTEM_TIME AS OF o.ts AS t \
                   ON o.buyer = t.buyer";
        let parsed = Parser::parse_sql(&FlinkDialect, sql).expect("parses");
        let Statement::Query(query) = &parsed[0] else {
            panic!("not a query: {parsed:?}");
        };
        let sqlparser::ast::SetExpr::Select(select) = &*query.body else {
            panic!("not a SELECT");
        };
        let TableFactor::Table { version, alias, .. } = &select.from[0].joins[0].relation else {
            panic!("not a table");
        };
        assert!(
            matches!(version, Some(TableVersion::ForSystemTimeAsOf(e)) if e.to_string() == "o.ts"),
            "{version:?}"
        );
        assert_eq!(alias.as_ref().map(|a| a.name.value.as_str()), Some("t"));
        assert!(Parser::parse_sql(&GenericDialect, sql).is_err());
    }
}

//! Flink's `CREATE TABLE`, parsed on top of sqlparser's tokens: columns with
//! types, computed columns, `WATERMARK FOR … AS …`, `PRIMARY KEY (…) NOT
//! ENFORCED` and `WITH ('key' = 'value', …)`, which sqlparser's own
//! `CREATE TABLE` does not know.

use std::collections::BTreeMap;

use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::catalog::{Column, ColumnKind, TableDef, WatermarkDef};
use crate::error::{position, Position, SqlError};
use crate::types::SqlType;

/// Whether the next token is the word `word` (keyword or not); consumes it
/// if so.
pub(crate) fn parse_word(parser: &mut Parser<'_>, word: &str) -> bool {
    if let Token::Word(w) = &parser.peek_token_ref().token {
        if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) {
            parser.next_token();
            return true;
        }
    }
    false
}

/// Where the next token starts.
pub(crate) fn here(parser: &Parser<'_>) -> Position {
    position(parser.peek_token_ref().span)
}

/// An error naming what was expected and what was found where.
pub(crate) fn expected(parser: &Parser<'_>, what: &str) -> SqlError {
    let t = parser.peek_token_ref();
    SqlError::Parse(format!(
        "expected {what}, found {} at {}",
        t.token,
        position(t.span)
    ))
}

/// Parses `CREATE [TEMPORARY] TABLE …` after `CREATE [TEMPORARY] TABLE`
/// (already consumed); `at` is where `CREATE` was. Every table lives as long
/// as its session, so `TEMPORARY` changes nothing.
pub(crate) fn parse_create_table(
    parser: &mut Parser<'_>,
    at: Position,
) -> Result<(TableDef, Tail), SqlError> {
    let name_at = here(parser);
    let name = crate::catalog::local_name(&parser.parse_object_name(false)?.to_string(), name_at)?;
    let mut columns: Vec<Column> = Vec::new();
    let mut watermark = None;
    let mut primary_key = Vec::new();
    // CREATE TABLE … AS SELECT takes its columns from the query.
    let listed = parser.consume_token(&Token::LParen);
    let follows = [Keyword::WITH, Keyword::AS, Keyword::LIKE];
    if !listed && !follows.iter().any(|k| parser.peek_keyword(*k)) {
        return Err(expected(parser, "'(' and the table's columns"));
    }
    if listed {
        loop {
            let elem_at = here(parser);
            if parse_word(parser, "WATERMARK") {
                parser.expect_keyword_is(Keyword::FOR)?;
                let column = parser.parse_identifier()?.value;
                parser.expect_keyword_is(Keyword::AS)?;
                let expr = parser.parse_expr()?;
                if watermark.is_some() {
                    return Err(SqlError::validation(
                        format!("table '{name}' has more than one WATERMARK"),
                        elem_at,
                    ));
                }
                watermark = Some(WatermarkDef {
                    column,
                    expr,
                    at: elem_at,
                });
            } else if parser.parse_keyword(Keyword::CONSTRAINT)
                || parser.peek_keyword(Keyword::PRIMARY)
            {
                if !parser.peek_keyword(Keyword::PRIMARY) {
                    // The constraint's name.
                    parser.parse_identifier()?;
                }
                parser.expect_keyword_is(Keyword::PRIMARY)?;
                parser.expect_keyword_is(Keyword::KEY)?;
                primary_key = parser
                    .parse_parenthesized_column_list(
                        sqlparser::parser::IsOptional::Mandatory,
                        false,
                    )?
                    .into_iter()
                    .map(|i| i.value)
                    .collect();
                if !parser.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
                    return Err(SqlError::validation(
                        "Flink supports only PRIMARY KEY … NOT ENFORCED: add NOT ENFORCED",
                        elem_at,
                    ));
                }
            } else {
                columns.push(parse_column(parser)?);
            }
            if parser.consume_token(&Token::Comma) {
                continue;
            }
            if parser.consume_token(&Token::RParen) {
                break;
            }
            return Err(expected(parser, "',' or ')' in the table's columns"));
        }
    }
    if parser.parse_keyword(Keyword::COMMENT) {
        parser.parse_literal_string()?;
    }
    if parser.peek_keyword(Keyword::PARTITIONED) {
        return Err(SqlError::unsupported("PARTITIONED BY", here(parser)));
    }
    let mut options = BTreeMap::new();
    if parser.parse_keyword(Keyword::WITH) {
        parser.expect_token(&Token::LParen)?;
        loop {
            if parser.consume_token(&Token::RParen) {
                break;
            }
            let key_at = here(parser);
            let key = parser.parse_literal_string()?;
            parser.expect_token(&Token::Eq)?;
            let value = parser.parse_literal_string()?;
            if options.insert(key.clone(), value).is_some() {
                return Err(SqlError::validation(
                    format!("option '{key}' is given twice"),
                    key_at,
                ));
            }
            if !parser.consume_token(&Token::Comma) {
                parser.expect_token(&Token::RParen)?;
                break;
            }
        }
    }
    let like = if parser.parse_keyword(Keyword::LIKE) {
        Some(parse_like(parser)?)
    } else {
        None
    };
    let query_at = here(parser);
    let query = if like.is_none() && parser.parse_keyword(Keyword::AS) {
        Some(parser.parse_query()?)
    } else {
        None
    };
    match (&query, columns.first(), &watermark) {
        (None, None, _) if !listed && like.is_none() => {
            return Err(expected(parser, "AS SELECT after the options"))
        }
        (Some(_), Some(column), _) => {
            return Err(SqlError::unsupported(
                "columns declared in CREATE TABLE … AS SELECT (it takes the query's; a PRIMARY KEY may be declared)",
                column.at,
            ))
        }
        (Some(_), None, Some(w)) => {
            return Err(SqlError::unsupported(
                "a WATERMARK in CREATE TABLE … AS SELECT",
                w.at,
            ))
        }
        _ => {}
    }
    let table = TableDef {
        name,
        columns,
        watermark,
        primary_key,
        options,
        at,
    };
    if let Some(like) = like {
        // Checked once merged with its base.
        return Ok((table, Tail::Like(like)));
    }
    let Some(query) = query else {
        validate(&table)?;
        return Ok((table, Tail::None));
    };
    if table.options.is_empty() {
        return Err(SqlError::validation(
            "CREATE TABLE … AS SELECT needs WITH (…) options saying where the rows go",
            query_at,
        ));
    }
    Ok((table, Tail::As(query)))
}

/// What follows a `CREATE TABLE`'s options.
pub(crate) enum Tail {
    None,
    /// `AS SELECT …`.
    As(Box<sqlparser::ast::Query>),
    /// `LIKE base [(…)]`.
    Like(Like),
}

/// `LIKE base [(INCLUDING | EXCLUDING | OVERWRITING feature …)]`: which of
/// the base table's features the new table takes, and how.
#[derive(Debug, Clone)]
pub(crate) struct Like {
    pub base: String,
    pub at: Position,
    pub constraints: Merge,
    pub generated: Merge,
    pub metadata: Merge,
    pub options: Merge,
    pub watermarks: Merge,
}

/// How a feature of a `LIKE`'s base table is merged into the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Merge {
    Excluding,
    /// Taken; the new table declaring it too is an error.
    Including,
    /// Taken unless the new table declares it.
    Overwriting,
}

fn parse_like(parser: &mut Parser<'_>) -> Result<Like, SqlError> {
    let at = here(parser);
    let base = parser.parse_object_name(false)?.to_string();
    // Flink's default: INCLUDING ALL OVERWRITING OPTIONS.
    let mut like = Like {
        base,
        at,
        constraints: Merge::Including,
        generated: Merge::Including,
        metadata: Merge::Including,
        options: Merge::Overwriting,
        watermarks: Merge::Including,
    };
    if !parser.consume_token(&Token::LParen) {
        return Ok(like);
    }
    while !parser.consume_token(&Token::RParen) {
        let option_at = here(parser);
        let merge = if parse_word(parser, "INCLUDING") {
            Merge::Including
        } else if parse_word(parser, "EXCLUDING") {
            Merge::Excluding
        } else if parse_word(parser, "OVERWRITING") {
            Merge::Overwriting
        } else {
            return Err(expected(parser, "INCLUDING, EXCLUDING or OVERWRITING"));
        };
        let feature = match &parser.peek_token_ref().token {
            Token::Word(w) => w.value.to_ascii_uppercase(),
            _ => String::new(),
        };
        parser.next_token();
        let overwritable = matches!(
            feature.as_str(),
            "GENERATED" | "METADATA" | "OPTIONS" | "WATERMARKS"
        );
        if merge == Merge::Overwriting && !overwritable {
            return Err(SqlError::validation(
                format!("OVERWRITING {feature}: only GENERATED, METADATA, OPTIONS and WATERMARKS can be overwritten"),
                option_at,
            ));
        }
        match feature.as_str() {
            "ALL" => {
                like.constraints = merge;
                like.generated = merge;
                like.metadata = merge;
                like.options = merge;
                like.watermarks = merge;
            }
            "CONSTRAINTS" => like.constraints = merge,
            "GENERATED" => like.generated = merge,
            "METADATA" => like.metadata = merge,
            "OPTIONS" => like.options = merge,
            "WATERMARKS" => like.watermarks = merge,
            // No table here is partitioned.
            "PARTITIONS" => {}
            _ => {
                return Err(SqlError::validation(
                    format!("'{feature}' is not a LIKE option (ALL, CONSTRAINTS, GENERATED, METADATA, OPTIONS, PARTITIONS, WATERMARKS)"),
                    option_at,
                ))
            }
        }
    }
    Ok(like)
}

/// `table` (declared `CREATE TABLE … LIKE base`) with what `like` takes of
/// `base`: its physical columns, then its computed and metadata columns
/// (unless excluded), then the new table's own; its primary key,
/// watermark and options, merged as `like` says.
pub(crate) fn table_like(
    mut table: TableDef,
    base: &TableDef,
    like: &Like,
) -> Result<TableDef, SqlError> {
    let conflict = |what: &str| {
        SqlError::validation(
            format!(
                "table '{}' declares {what} that its LIKE base '{}' has too (EXCLUDING or OVERWRITING it takes the new one)",
                table.name, base.name
            ),
            like.at,
        )
    };
    let mut columns = Vec::new();
    for c in &base.columns {
        let merge = match c.kind {
            ColumnKind::Physical { .. } => Merge::Including,
            ColumnKind::Computed(_) => like.generated,
            ColumnKind::Metadata { .. } => like.metadata,
        };
        let redeclared = table
            .columns
            .iter()
            .any(|n| n.name.eq_ignore_ascii_case(&c.name));
        match merge {
            Merge::Excluding => {}
            Merge::Overwriting if redeclared => {}
            Merge::Including if redeclared => {
                return Err(conflict(&format!("the column '{}'", c.name)))
            }
            _ => columns.push(c.clone()),
        }
    }
    columns.append(&mut table.columns);
    table.columns = columns;
    if like.constraints != Merge::Excluding && !base.primary_key.is_empty() {
        if !table.primary_key.is_empty() {
            return Err(conflict("a PRIMARY KEY"));
        }
        table.primary_key = base.primary_key.clone();
    }
    if let Some(w) = &base.watermark {
        match (like.watermarks, &table.watermark) {
            (Merge::Excluding, _) | (Merge::Overwriting, Some(_)) => {}
            (Merge::Including, Some(_)) => return Err(conflict("a WATERMARK")),
            (_, None) => table.watermark = Some(w.clone()),
        }
    }
    if like.options != Merge::Excluding {
        let mut options = base.options.clone();
        for (k, v) in std::mem::take(&mut table.options) {
            if options.contains_key(&k) && like.options == Merge::Including {
                return Err(conflict(&format!("the option '{k}'")));
            }
            options.insert(k, v);
        }
        table.options = options;
    }
    validate(&table)?;
    Ok(table)
}

/// The table `CREATE TABLE … AS SELECT` makes: `table` with the query's
/// output columns (`columns`), all of them read and written.
pub(crate) fn table_as(
    mut table: TableDef,
    columns: &[(String, SqlType)],
) -> Result<TableDef, SqlError> {
    for (name, ty) in columns {
        if *ty == SqlType::Null {
            return Err(SqlError::validation(
                format!("the query's column '{name}' has no type (NULL): CAST it"),
                table.at,
            ));
        }
        table.columns.push(Column {
            name: name.clone(),
            kind: ColumnKind::Physical {
                data_type: *ty,
                nullable: true,
            },
            at: table.at,
        });
    }
    validate(&table)?;
    Ok(table)
}

/// `name type [NOT NULL] [COMMENT '…']` or `name AS expr [COMMENT '…']`.
fn parse_column(parser: &mut Parser<'_>) -> Result<Column, SqlError> {
    let at = here(parser);
    let name = parser.parse_identifier()?.value;
    let kind = if parser.parse_keyword(Keyword::AS) {
        ColumnKind::Computed(Box::new(parser.parse_expr()?))
    } else {
        let type_at = here(parser);
        let ast = parser.parse_data_type()?;
        let data_type =
            SqlType::from_ast(&ast).map_err(|what| SqlError::unsupported(what, type_at))?;
        if parser.parse_keyword(Keyword::METADATA) {
            // `METADATA [FROM 'key'] [VIRTUAL]`: the key defaults to the
            // column's name.
            let key = if parser.parse_keyword(Keyword::FROM) {
                parser.parse_literal_string()?
            } else {
                name.clone()
            };
            let is_virtual = parser.parse_keyword(Keyword::VIRTUAL);
            if parser.parse_keyword(Keyword::COMMENT) {
                parser.parse_literal_string()?;
            }
            return Ok(Column {
                name,
                kind: ColumnKind::Metadata {
                    data_type,
                    key,
                    is_virtual,
                },
                at,
            });
        }
        let nullable = !parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]);
        // Flink also accepts an explicit NULL.
        let _ = nullable && parser.parse_keyword(Keyword::NULL);
        ColumnKind::Physical {
            data_type,
            nullable,
        }
    };
    if parser.parse_keyword(Keyword::COMMENT) {
        parser.parse_literal_string()?;
    }
    Ok(Column { name, kind, at })
}

/// Names are unique; the watermark's and primary key's columns exist.
fn validate(table: &TableDef) -> Result<(), SqlError> {
    let mut seen = std::collections::HashSet::new();
    for c in &table.columns {
        if !seen.insert(c.name.to_lowercase()) {
            return Err(SqlError::validation(
                format!(
                    "column '{}' is declared twice in table '{}'",
                    c.name, table.name
                ),
                c.at,
            ));
        }
    }
    let find = |name: &str| {
        table
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    };
    if let Some(w) = &table.watermark {
        match find(&w.column) {
            None => {
                return Err(SqlError::validation(
                    format!(
                        "the watermark's column '{}' is not a column of table '{}'",
                        w.column, table.name
                    ),
                    w.at,
                ))
            }
            Some(Column {
                kind:
                    ColumnKind::Physical { data_type, .. } | ColumnKind::Metadata { data_type, .. },
                ..
            }) if !data_type.is_timestamp() => {
                return Err(SqlError::validation(
                    format!(
                        "the watermark's column '{}' must be a TIMESTAMP(3) or TIMESTAMP_LTZ(3), not {data_type}",
                        w.column
                    ),
                    w.at,
                ))
            }
            Some(_) => {}
        }
    }
    for k in &table.primary_key {
        if find(k).is_none() {
            return Err(SqlError::validation(
                format!(
                    "the primary key's column '{k}' is not a column of table '{}'",
                    table.name
                ),
                table.at,
            ));
        }
    }
    Ok(())
}

//! A script of statements separated by `;`: Flink's DDL and `SET` parsed
//! here, everything else by sqlparser.

use sqlparser::ast::{Ident, Query, SetExpr, Statement as Ast, TableAliasColumnDef, TableFactor};
use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::catalog::TableDef;
use crate::ddl::{expected, here, parse_create_table, parse_word, Tail};
use crate::error::{Position, SqlError};

/// One statement of a script.
#[derive(Debug)]
pub(crate) enum Statement {
    CreateTable(Box<TableDef>),
    CreateView {
        name: String,
        query: Box<Query>,
        at: Position,
    },
    /// `CREATE TABLE t (…) WITH (…) LIKE base (…)`: the table, to be
    /// merged with `base`'s features.
    CreateTableLike {
        table: Box<TableDef>,
        like: crate::ddl::Like,
    },
    /// `CREATE TABLE t [(PRIMARY KEY (…) NOT ENFORCED)] WITH (…) AS
    /// SELECT …`: the table, with the query's columns, and a job writing
    /// the query's rows into it.
    CreateTableAs {
        table: Box<TableDef>,
        query: Box<Query>,
    },
    /// `CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS
    /// 'identifier' [LANGUAGE …]`.
    CreateFunction {
        name: String,
        identifier: String,
        if_not_exists: bool,
        at: Position,
    },
    /// `CREATE … IF NOT EXISTS name …`: `statement`, unless a table or
    /// view `name` exists (then nothing).
    IfNotExists {
        name: String,
        statement: Box<Statement>,
    },
    /// `SET 'key' = 'value'`.
    Set {
        key: String,
        value: String,
    },
    /// `RESET 'key'`, or `RESET` of every key.
    Reset {
        key: Option<String>,
    },
    /// `INSERT INTO table [(columns)] SELECT …`.
    Insert {
        table: String,
        /// The columns the query's give values for, in order; all of the
        /// table's when empty.
        columns: Vec<String>,
        query: Box<Query>,
        at: Position,
    },
    /// A `SELECT` (or other query) whose rows the client shows.
    Query {
        query: Box<Query>,
    },
    /// `EXPLAIN` of an `INSERT`, a query or a statement set.
    Explain(Box<Statement>),
    /// `SHOW TABLES` (tables and views, as Flink lists them), `SHOW
    /// VIEWS`, `SHOW CATALOGS`, `SHOW DATABASES`, `SHOW CURRENT CATALOG`
    /// or `SHOW CURRENT DATABASE`.
    Show(Listing),
    /// `USE CATALOG name` or `USE [catalog.]database`: only the session's
    /// own.
    Use {
        catalog: bool,
        name: String,
        at: Position,
    },
    /// `SHOW CREATE TABLE name` / `SHOW CREATE VIEW name`: the statement
    /// that would make it.
    ShowCreate {
        view: bool,
        name: String,
        at: Position,
    },
    /// `DROP [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] name`.
    DropFunction {
        name: String,
        if_exists: bool,
        at: Position,
    },
    /// `ALTER TABLE name RENAME TO new | SET ('k' = 'v', …) | RESET ('k',
    /// …)`.
    AlterTable {
        name: String,
        change: TableChange,
        at: Position,
    },
    /// `DESCRIBE name` / `DESC name`: a table's or view's columns.
    Describe {
        name: String,
        at: Position,
    },
    /// `DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name`.
    Drop {
        view: bool,
        name: String,
        if_exists: bool,
        at: Position,
    },
    /// `EXECUTE STATEMENT SET BEGIN INSERT …; … END` (or the SQL client's
    /// `BEGIN STATEMENT SET; … END;`): its `INSERT`s, run as one job.
    Inserts {
        inserts: Vec<Statement>,
    },
}

/// What `ALTER TABLE` changes.
#[derive(Debug, Clone)]
pub(crate) enum TableChange {
    Rename(String),
    Set(Vec<(String, String)>),
    Reset(Vec<String>),
}

/// What a `SHOW` statement lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    Tables,
    Views,
    Catalogs,
    Databases,
    CurrentCatalog,
    CurrentDatabase,
    /// `SHOW USER FUNCTIONS`: the session's own.
    UserFunctions,
    /// `SET;`: the session's settings.
    Settings,
}

/// `sql` with the word `TABLE` of table arguments (`TUMBLE(TABLE t, …)`,
/// `DATA => TABLE t`) blanked out: sqlparser does not parse a table as a
/// function argument, but parses the bare name. A partitioned table
/// argument (`TABLE t PARTITION BY k`, as `SESSION` takes) becomes the
/// named argument `t,PARTITION=> k`. Blanking (not removing) keeps every
/// position in error messages where it was.
fn blank_table_arguments(sql: &str) -> Result<String, SqlError> {
    use sqlparser::tokenizer::{Location, Tokenizer};
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    let significant: Vec<_> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // Columns count characters; the byte offset of a location.
    let byte_at = |loc: Location| -> Option<usize> {
        let line_start = *line_starts.get(loc.line.saturating_sub(1) as usize)?;
        sql[line_start..]
            .char_indices()
            .map(|(b, _)| line_start + b)
            .chain(std::iter::once(sql.len()))
            .nth(loc.column.saturating_sub(1) as usize)
    };
    let word = |i: usize, keyword: Keyword| matches!(significant.get(i).map(|t| &t.token), Some(Token::Word(w)) if w.keyword == keyword && w.quote_style.is_none());
    let mut out = sql.to_string();
    for i in 1..significant.len().saturating_sub(1) {
        let in_arguments = matches!(
            significant[i - 1].token,
            Token::LParen | Token::Comma | Token::RArrow
        );
        if !(word(i, Keyword::TABLE)
            && in_arguments
            && matches!(significant[i + 1].token, Token::Word(_)))
        {
            continue;
        }
        if let Some(b) = byte_at(significant[i].span.start) {
            out.replace_range(b..b + 5, "     ");
        }
        if word(i + 2, Keyword::PARTITION) && word(i + 3, Keyword::BY) {
            let (Some(from), Some(to)) = (
                byte_at(significant[i + 1].span.end),
                significant.get(i + 4).and_then(|t| byte_at(t.span.start)),
            ) else {
                continue;
            };
            // Same length, same line breaks.
            let span = &sql[from..to];
            let breaks = span.matches('\n').count();
            let named = ",PARTITION=>";
            if span.len() >= named.len() + breaks {
                let mut replacement = named.to_string();
                replacement.extend(std::iter::repeat_n(' ', span.len() - named.len() - breaks));
                replacement.extend(std::iter::repeat_n('\n', breaks));
                out.replace_range(from..to, &replacement);
            }
        }
    }
    Ok(out)
}

/// A statement set's `INSERT`s, up to its `END` (consumed): each ends
/// with `;`.
fn parse_statement_set(parser: &mut Parser<'_>, at: Position) -> Result<Statement, SqlError> {
    let mut inserts = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parse_word(parser, "END") {
            break;
        }
        if parser.peek_token_ref().token == Token::EOF {
            return Err(expected(parser, "END to close the STATEMENT SET"));
        }
        let statement_at = here(parser);
        match parse_statement(parser)? {
            insert @ Statement::Insert { .. } => inserts.push(insert),
            _ => {
                return Err(SqlError::unsupported(
                    "a statement other than INSERT INTO in a STATEMENT SET",
                    statement_at,
                ))
            }
        }
        if !parser.consume_token(&Token::SemiColon) {
            return Err(expected(parser, "';' after the INSERT"));
        }
    }
    if inserts.is_empty() {
        return Err(SqlError::validation(
            "a STATEMENT SET without an INSERT",
            at,
        ));
    }
    Ok(Statement::Inserts { inserts })
}

/// The statements of `sql`, in order.
pub(crate) fn parse_script(sql: &str) -> Result<Vec<Statement>, SqlError> {
    let dialect = crate::dialect::FlinkDialect;
    let sql = blank_table_arguments(sql)?;
    let mut parser = Parser::new(&dialect).try_with_sql(&sql)?;
    let mut out = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token_ref().token == Token::EOF {
            break;
        }
        // sqlparser says where an unexpected token is, but not where the
        // input ended.
        let statement = parse_statement(&mut parser).map_err(|e| match e {
            SqlError::Parse(m) if m.ends_with("EOF") => SqlError::Parse(format!(
                "{m} (the script ended in the middle of a statement)"
            )),
            other => other,
        })?;
        out.push(statement);
        if !parser.consume_token(&Token::SemiColon) && parser.peek_token_ref().token != Token::EOF {
            return Err(expected(&parser, "';' after the statement"));
        }
    }
    Ok(out)
}

fn parse_statement(parser: &mut Parser<'_>) -> Result<Statement, SqlError> {
    let at = here(parser);
    if parser.parse_keyword(Keyword::EXPLAIN) {
        // Flink's EXPLAIN [PLAN FOR] …
        let _ = parser.parse_keywords(&[Keyword::PLAN, Keyword::FOR]);
        // Flink's EXPLAIN STATEMENT SET BEGIN …; END.
        if parse_word(parser, "STATEMENT") {
            if !(parse_word(parser, "SET") && parse_word(parser, "BEGIN")) {
                return Err(expected(parser, "SET BEGIN after EXPLAIN STATEMENT"));
            }
            return Ok(Statement::Explain(Box::new(parse_statement_set(
                parser, at,
            )?)));
        }
        let inner = parse_statement(parser)?;
        return match inner {
            Statement::Insert { .. } | Statement::Query { .. } | Statement::Inserts { .. } => {
                Ok(Statement::Explain(Box::new(inner)))
            }
            _ => Err(SqlError::unsupported(
                "EXPLAIN of anything but INSERT, a query or a statement set",
                at,
            )),
        };
    }
    if parse_word(parser, "SHOW") {
        if parse_word(parser, "CREATE") {
            let view = if parser.parse_keyword(Keyword::TABLE) {
                false
            } else if parser.parse_keyword(Keyword::VIEW) {
                true
            } else {
                return Err(expected(parser, "TABLE or VIEW after SHOW CREATE"));
            };
            let name_at = here(parser);
            let name = parser.parse_object_name(false)?.to_string();
            return Ok(Statement::ShowCreate {
                view,
                name,
                at: name_at,
            });
        }
        let current = parse_word(parser, "CURRENT");
        let listing = match () {
            _ if current && parse_word(parser, "CATALOG") => Listing::CurrentCatalog,
            _ if current && parse_word(parser, "DATABASE") => Listing::CurrentDatabase,
            _ if current => return Err(expected(parser, "CATALOG or DATABASE")),
            _ if parse_word(parser, "TABLES") => Listing::Tables,
            _ if parse_word(parser, "VIEWS") => Listing::Views,
            _ if parse_word(parser, "CATALOGS") => Listing::Catalogs,
            _ if parse_word(parser, "DATABASES") => Listing::Databases,
            _ if parse_word(parser, "USER") => {
                if !parse_word(parser, "FUNCTIONS") {
                    return Err(expected(parser, "FUNCTIONS after SHOW USER"));
                }
                Listing::UserFunctions
            }
            _ => {
                return Err(SqlError::unsupported(
                    "SHOW other than TABLES, VIEWS, CATALOGS, DATABASES, CURRENT CATALOG, CURRENT DATABASE, CREATE TABLE, CREATE VIEW or USER FUNCTIONS",
                    at,
                ))
            }
        };
        return Ok(Statement::Show(listing));
    }
    if parse_word(parser, "USE") {
        let name_at = here(parser);
        let catalog = parse_word(parser, "CATALOG");
        let name = parser.parse_object_name(false)?.to_string();
        return Ok(Statement::Use {
            catalog,
            name,
            at: name_at,
        });
    }
    if parse_word(parser, "DESCRIBE") || parse_word(parser, "DESC") {
        let name_at = here(parser);
        let name = parser.parse_object_name(false)?.to_string();
        return Ok(Statement::Describe { name, at: name_at });
    }
    if parse_word(parser, "ALTER") {
        if !parser.parse_keyword(Keyword::TABLE) {
            return Err(SqlError::unsupported("ALTER other than ALTER TABLE", at));
        }
        let name = parser.parse_object_name(false)?.to_string();
        let change_at = here(parser);
        let change = if parse_word(parser, "RENAME") {
            if !parse_word(parser, "TO") {
                return Err(expected(parser, "TO after RENAME"));
            }
            let new_at = here(parser);
            TableChange::Rename(crate::catalog::local_name(
                &parser.parse_object_name(false)?.to_string(),
                new_at,
            )?)
        } else if parse_word(parser, "SET") {
            parser.expect_token(&Token::LParen)?;
            let mut options = Vec::new();
            loop {
                let key = parser.parse_literal_string()?;
                parser.expect_token(&Token::Eq)?;
                options.push((key, parser.parse_literal_string()?));
                if !parser.consume_token(&Token::Comma) {
                    parser.expect_token(&Token::RParen)?;
                    break;
                }
            }
            TableChange::Set(options)
        } else if parse_word(parser, "RESET") {
            parser.expect_token(&Token::LParen)?;
            let mut keys = Vec::new();
            loop {
                keys.push(parser.parse_literal_string()?);
                if !parser.consume_token(&Token::Comma) {
                    parser.expect_token(&Token::RParen)?;
                    break;
                }
            }
            TableChange::Reset(keys)
        } else {
            return Err(SqlError::unsupported(
                "ALTER TABLE other than RENAME TO, SET (…) or RESET (…)",
                change_at,
            ));
        };
        return Ok(Statement::AlterTable { name, change, at });
    }
    if parse_word(parser, "DROP") {
        let _ = parser.parse_keyword(Keyword::TEMPORARY);
        let _ = parse_word(parser, "SYSTEM");
        if parser.parse_keyword(Keyword::FUNCTION) {
            let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            let name = parser.parse_object_name(false)?.to_string();
            return Ok(Statement::DropFunction {
                name,
                if_exists,
                at,
            });
        }
        let view = if parser.parse_keyword(Keyword::TABLE) {
            false
        } else if parser.parse_keyword(Keyword::VIEW) {
            true
        } else {
            return Err(SqlError::unsupported(
                "DROP other than DROP TABLE, DROP VIEW or DROP FUNCTION",
                at,
            ));
        };
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = parser.parse_object_name(false)?.to_string();
        return Ok(Statement::Drop {
            view,
            name,
            if_exists,
            at,
        });
    }
    // Flink's `EXECUTE STATEMENT SET BEGIN …; END` and its SQL client's
    // `BEGIN STATEMENT SET; …; END;`.
    let execute = parse_word(parser, "EXECUTE");
    if execute || parse_word(parser, "BEGIN") {
        let set = execute
            || matches!(&parser.peek_token_ref().token, Token::Word(w) if w.value.eq_ignore_ascii_case("STATEMENT"));
        if set {
            if !(parse_word(parser, "STATEMENT") && parse_word(parser, "SET")) {
                return Err(expected(parser, "STATEMENT SET"));
            }
            if execute && !parse_word(parser, "BEGIN") {
                return Err(expected(parser, "BEGIN after EXECUTE STATEMENT SET"));
            }
            return parse_statement_set(parser, at);
        }
        if execute {
            return Err(SqlError::unsupported(
                "EXECUTE other than a STATEMENT SET",
                at,
            ));
        }
        parser.prev_token();
    }
    if parser.parse_keyword(Keyword::SET) {
        if matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
            return Ok(Statement::Show(Listing::Settings));
        }
        let key = parser.parse_literal_string()?;
        parser.expect_token(&Token::Eq)?;
        let value = parser.parse_literal_string()?;
        return Ok(Statement::Set { key, value });
    }
    if parse_word(parser, "RESET") {
        // `RESET;` resets every setting.
        let key = if matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
            None
        } else {
            Some(parser.parse_literal_string()?)
        };
        return Ok(Statement::Reset { key });
    }
    if parser.parse_keyword(Keyword::CREATE) {
        let temporary = parser.parse_keyword(Keyword::TEMPORARY);
        if parser.parse_keyword(Keyword::TABLE) {
            let if_not_exists =
                parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
            let statement = match parse_create_table(parser, at)? {
                (table, Tail::None) => Ok(Statement::CreateTable(Box::new(table))),
                (table, Tail::As(query)) if !temporary => Ok(Statement::CreateTableAs {
                    table: Box::new(table),
                    query,
                }),
                (_, Tail::As(_)) => Err(SqlError::unsupported(
                    "CREATE TEMPORARY TABLE … AS SELECT (as in Flink)",
                    at,
                )),
                (table, Tail::Like(like)) => Ok(Statement::CreateTableLike {
                    table: Box::new(table),
                    like,
                }),
            }?;
            return Ok(unless_exists(statement, if_not_exists));
        }
        let system = temporary && parser.parse_keyword(Keyword::SYSTEM);
        if parser.parse_keyword(Keyword::FUNCTION) {
            let if_not_exists =
                parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
            let name = parser.parse_object_name(false)?.to_string();
            parser.expect_keyword_is(Keyword::AS)?;
            let identifier = parser.parse_literal_string()?;
            if parse_word(parser, "LANGUAGE") {
                parser.parse_identifier()?;
            }
            if parse_word(parser, "USING") {
                return Err(SqlError::unsupported("CREATE FUNCTION … USING JAR", at));
            }
            return Ok(Statement::CreateFunction {
                name,
                identifier,
                if_not_exists,
                at,
            });
        }
        if system {
            parser.prev_token();
        }
        // Anything else (views) is sqlparser's: back to CREATE.
        if temporary {
            parser.prev_token();
        }
        parser.prev_token();
    }
    match parser.parse_statement()? {
        Ast::Query(query) => Ok(Statement::Query { query }),
        Ast::Insert(insert) => {
            let table = insert.table.to_string();
            if insert.overwrite {
                return Err(SqlError::unsupported("INSERT OVERWRITE", at));
            }
            match insert.source {
                Some(query) => Ok(Statement::Insert {
                    table,
                    columns: insert
                        .columns
                        .iter()
                        .map(|c| match c.0.as_slice() {
                            [part] => part
                                .as_ident()
                                .map_or_else(|| c.to_string(), |i| i.value.clone()),
                            _ => c.to_string(),
                        })
                        .collect(),
                    query,
                    at,
                }),
                None => Err(SqlError::unsupported("INSERT without a query", at)),
            }
        }
        Ast::CreateView(view) => {
            if view.materialized {
                return Err(SqlError::unsupported("CREATE MATERIALIZED VIEW", at));
            }
            if view.or_replace {
                return Err(SqlError::unsupported("CREATE OR REPLACE VIEW", at));
            }
            let columns: Vec<Ident> = view.columns.into_iter().map(|c| c.name).collect();
            let statement = Statement::CreateView {
                name: crate::catalog::local_name(&view.name.to_string(), at)?,
                query: with_column_names(view.query, &view.name.to_string(), columns)?,
                at,
            };
            Ok(unless_exists(statement, view.if_not_exists))
        }
        other => {
            let text = other.to_string();
            let first: String = text
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            Err(SqlError::unsupported(
                format!("the statement {first} …"),
                at,
            ))
        }
    }
}

/// `query`, its columns renamed to `columns` (`CREATE VIEW v (a, b) AS
/// …`): `SELECT * FROM (query) AS v (a, b)`.
fn with_column_names(
    query: Box<Query>,
    view: &str,
    columns: Vec<Ident>,
) -> Result<Box<Query>, SqlError> {
    if columns.is_empty() {
        return Ok(query);
    }
    let dialect = crate::dialect::FlinkDialect;
    let mut outer = Parser::new(&dialect)
        .try_with_sql("SELECT * FROM (SELECT 1) AS v")?
        .parse_query()?;
    if let SetExpr::Select(select) = outer.body.as_mut() {
        if let Some(TableFactor::Derived {
            subquery, alias, ..
        }) = select.from.first_mut().map(|f| &mut f.relation)
        {
            *subquery = query;
            if let Some(alias) = alias {
                alias.name = Ident::new(view);
                alias.columns = columns
                    .into_iter()
                    .map(|c| TableAliasColumnDef {
                        name: c,
                        data_type: None,
                    })
                    .collect();
            }
        }
    }
    Ok(outer)
}

/// `INSERT INTO target (columns) query`'s rows as `target`'s: the
/// query's values in the columns listed, NULL in the others.
pub(crate) fn insert_listing(
    query: &Query,
    columns: &[String],
    target: &TableDef,
    at: Position,
) -> Result<Query, SqlError> {
    let physical: Vec<(&str, crate::types::SqlType)> = target.physical().collect();
    for (i, c) in columns.iter().enumerate() {
        if !physical.iter().any(|(n, _)| n.eq_ignore_ascii_case(c)) {
            return Err(SqlError::validation(
                format!(
                    "table '{}' has no column '{c}' to insert into (its columns: {})",
                    target.name,
                    physical
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                at,
            ));
        }
        if columns[..i].iter().any(|d| d.eq_ignore_ascii_case(c)) {
            return Err(SqlError::validation(
                format!(
                    "column '{c}' is listed twice in INSERT INTO {}",
                    target.name
                ),
                at,
            ));
        }
    }
    let quoted = |name: &str| format!("`{}`", name.replace('`', "``"));
    let items: Vec<String> = physical
        .iter()
        .map(|(name, ty)| {
            if columns.iter().any(|c| c.eq_ignore_ascii_case(name)) {
                quoted(name)
            } else {
                format!("CAST(NULL AS {ty}) AS {}", quoted(name))
            }
        })
        .collect();
    let listed: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
    let text = format!(
        "SELECT {} FROM (SELECT 1) AS {} ({})",
        items.join(", "),
        quoted(&target.name),
        listed.join(", ")
    );
    let dialect = crate::dialect::FlinkDialect;
    let mut outer = Parser::new(&dialect).try_with_sql(&text)?.parse_query()?;
    if let SetExpr::Select(select) = outer.body.as_mut() {
        if let Some(TableFactor::Derived { subquery, .. }) =
            select.from.first_mut().map(|f| &mut f.relation)
        {
            **subquery = query.clone();
        }
    }
    Ok(*outer)
}

/// `statement`, or, `if_not_exists`, `statement` unless its table or
/// view exists.
fn unless_exists(statement: Statement, if_not_exists: bool) -> Statement {
    let name = match &statement {
        Statement::CreateTable(table)
        | Statement::CreateTableLike { table, .. }
        | Statement::CreateTableAs { table, .. } => table.name.clone(),
        Statement::CreateView { name, .. } => name.clone(),
        _ => return statement,
    };
    if !if_not_exists {
        return statement;
    }
    Statement::IfNotExists {
        name,
        statement: Box::new(statement),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnKind;
    use crate::types::SqlType;

    #[test]
    fn a_flink_create_table_parses_whole() {
        let stmts = parse_script(
            "CREATE TEMPORARY TABLE orders (
               order_id BIGINT NOT NULL,
               `price` DECIMAL(10, 2),
               buyer STRING,
               ts TIMESTAMP(3),
               cost AS price * 2,
               WATERMARK FOR ts AS ts - INTERVAL '2' SECOND,
               PRIMARY KEY (order_id) NOT ENFORCED
             ) WITH ('connector' = 'filesystem', 'path' = '/tmp/o.csv', 'format' = 'csv');
             SET 'parallelism.default' = '2';",
        )
        .unwrap();
        let Statement::CreateTable(t) = &stmts[0] else {
            panic!("{stmts:?}")
        };
        assert_eq!(t.name, "orders");
        let physical: Vec<_> = t.physical().collect();
        assert_eq!(
            physical,
            vec![
                ("order_id", SqlType::BigInt),
                ("price", SqlType::Decimal(10, 2)),
                ("buyer", SqlType::String),
                ("ts", SqlType::Timestamp)
            ]
        );
        assert!(matches!(t.columns[4].kind, ColumnKind::Computed(_)));
        let w = t.watermark.as_ref().unwrap();
        assert_eq!(w.column, "ts");
        assert_eq!(w.expr.to_string(), "ts - INTERVAL '2' SECOND");
        assert_eq!(t.primary_key, vec!["order_id"]);
        assert_eq!(t.option("path"), Some("/tmp/o.csv"));
        assert!(
            matches!(&stmts[1], Statement::Set { key, value } if key == "parallelism.default" && value == "2")
        );
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse_script("CREATE TABLE t (a INT,\n  b BIGINT\n  c INT) WITH ()").unwrap_err();
        assert_eq!(
            e.to_string(),
            "SQL parse error: expected ',' or ')' in the table's columns, found c at line 3, column 3"
        );
        let e = parse_script("CREATE TABLE t (a INT, WATERMARK FOR b AS b)").unwrap_err();
        assert!(
            e.to_string().contains(
                "the watermark's column 'b' is not a column of table 't' (at line 1, column 24)"
            ),
            "{e}"
        );
        let e = parse_script("CREATE TABLE t (a INT, PRIMARY KEY (a))").unwrap_err();
        assert!(e.to_string().contains("NOT ENFORCED"), "{e}");
        let e = parse_script("CREATE TABLE t (a INT, ts INT, WATERMARK FOR ts AS ts)").unwrap_err();
        assert!(e.to_string().contains("must be a TIMESTAMP(3)"), "{e}");
        let e = parse_script("SELECT a FROM t WHERE").unwrap_err();
        assert!(
            e.to_string().contains("ended in the middle of a statement"),
            "{e}"
        );
        let e = parse_script("SELECT a\nFROM t WHERE a = = 1").unwrap_err();
        assert!(e.to_string().contains("Line: 2, Column: 18"), "{e}");
        let e = parse_script("GRANT SELECT ON t TO u").unwrap_err();
        assert_eq!(
            e.to_string(),
            "not supported: the statement GRANT SELECT … (at line 1, column 1)"
        );
    }

    #[test]
    fn views_inserts_queries_and_explain() {
        let stmts = parse_script(
            "CREATE VIEW big AS SELECT * FROM orders WHERE price > 10;
             INSERT INTO out SELECT * FROM big;
             SELECT 1;
             EXPLAIN SELECT * FROM big",
        )
        .unwrap();
        assert!(matches!(&stmts[0], Statement::CreateView { name, .. } if name == "big"));
        assert!(matches!(&stmts[1], Statement::Insert { table, .. } if table == "out"));
        assert!(matches!(&stmts[2], Statement::Query { .. }));
        assert!(matches!(&stmts[3], Statement::Explain(_)));
    }
}

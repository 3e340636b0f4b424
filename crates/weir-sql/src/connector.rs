//! Tables as sources and sinks of a job, by their `'connector'` option:
//! `filesystem` (CSV), `nexmark` and `datagen` sources, `print` and
//! `blackhole` sinks. Options are
//! validated as Flink does: a missing required option or an unknown one is
//! an error naming it, before the job starts.

use std::collections::BTreeSet;

use weir::prelude::*;
use weir::watermark::{WatermarkGenerator, WatermarkOutput};

use crate::catalog::{ColumnKind, TableDef};
use crate::error::SqlError;
use crate::expr::{cast, compile, Eval, Scope};
use crate::types::SqlType;
use crate::value::{Row, Value};

pub(crate) fn connector_error(table: &TableDef, message: impl Into<String>) -> SqlError {
    SqlError::Connector {
        table: table.name.clone(),
        message: message.into(),
    }
}

/// The table's connector name, or an error.
fn connector(table: &TableDef) -> Result<&str, SqlError> {
    table
        .option("connector")
        .ok_or_else(|| connector_error(table, "the option 'connector' is missing"))
}

/// A boolean option (false when absent).
fn flag(table: &TableDef, key: &str) -> Result<bool, SqlError> {
    match table.option(key) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(other) => Err(connector_error(
            table,
            format!("'{key}' must be true or false, not '{other}'"),
        )),
    }
}

/// Fails on options `known` does not list (Flink: "Unsupported options").
pub(crate) fn check_options(table: &TableDef, known: &[&str]) -> Result<(), SqlError> {
    let unknown: BTreeSet<&str> = table
        .options
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(connector_error(
            table,
            format!(
                "unsupported options for connector '{}': {} (supported: {})",
                table.option("connector").unwrap_or_default(),
                unknown.into_iter().collect::<Vec<_>>().join(", "),
                known.join(", ")
            ),
        ))
    }
}

/// The full scope of a table's rows: physical columns, then computed ones
/// in declaration order (each computed from the physical ones).
pub(crate) struct TableRows {
    pub scope: Scope,
    /// Computed columns, in the order they follow the physical ones.
    pub computed: Vec<Eval>,
    /// Where each declared column is in the row.
    pub order: Vec<usize>,
}

/// How a table's rows are laid out, with its computed columns compiled.
pub(crate) fn table_rows(table: &TableDef) -> Result<TableRows, SqlError> {
    let physical = Scope::of(table.physical().map(|(n, t)| (n.to_string(), t)).collect());
    let mut scope = physical.clone();
    let mut computed = Vec::new();
    let mut order = Vec::new();
    let mut next_computed = physical.columns.len();
    let mut next_physical = 0;
    for c in &table.columns {
        match &c.kind {
            ColumnKind::Physical { .. } => {
                order.push(next_physical);
                next_physical += 1;
            }
            ColumnKind::Computed(e) => {
                let compiled = compile(e, &physical)?;
                scope.columns.push((c.name.clone(), compiled.ty));
                computed.push(compiled.eval);
                order.push(next_computed);
                next_computed += 1;
            }
        }
    }
    // Declared order for the query: reorder the scope.
    let declared = Scope::of(order.iter().map(|&i| scope.columns[i].clone()).collect());
    Ok(TableRows {
        scope: declared,
        computed,
        order,
    })
}

/// Which physical columns the query reads, given which declared columns it
/// names (`None`: all): those, the watermark's, and all of them when a
/// computed column is read. The others are left NULL by the source.
fn physical_needed(
    table: &TableDef,
    rows: &TableRows,
    needed: Option<&[bool]>,
) -> Result<Vec<bool>, SqlError> {
    let n = table.physical().count();
    let Some(needed) = needed else {
        return Ok(vec![true; n]);
    };
    let mut declared = needed.to_vec();
    if let Some(w) = &table.watermark {
        let tracking = rows.scope.tracking();
        tracking.index(&w.column, w.at)?;
        compile(&w.expr, &tracking)?;
        for (d, u) in declared.iter_mut().zip(tracking.used_columns()) {
            *d |= u;
        }
    }
    let mut physical = vec![false; n];
    let mut p = 0;
    for (c, used) in table.columns.iter().zip(&declared) {
        match c.kind {
            ColumnKind::Physical { .. } => {
                physical[p] = *used;
                p += 1;
            }
            ColumnKind::Computed(_) if *used => return Ok(vec![true; n]),
            ColumnKind::Computed(_) => {}
        }
    }
    Ok(physical)
}

/// Splits a CSV line into fields (RFC 4180 quoting: `"a,b"`, `""` for a
/// quote).
fn split_csv(line: &str, delimiter: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Watermarks of a table's `WATERMARK FOR … AS expr`: the largest value
/// of `expr` over the rows so far (Flink SQL's watermark is the
/// expression's value itself, not one less as the DataStream API's bounded
/// out-of-orderness generator emits).
#[derive(Clone)]
struct SqlWatermarks {
    expr: Eval,
    max: i64,
    per_row: bool,
}

impl WatermarkGenerator<Row> for SqlWatermarks {
    fn on_event(&mut self, row: &Row, _timestamp: i64, output: &mut WatermarkOutput) {
        if let Ok(v) = (self.expr)(&row.values) {
            if let Some(ms) = v.as_i64() {
                if ms > self.max {
                    self.max = ms;
                    if self.per_row {
                        output.emit_watermark(ms);
                    }
                }
            }
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        if self.max > i64::MIN {
            output.emit_watermark(self.max);
        }
    }
}

/// The rows of `table` read as a source, in declared column order, with
/// timestamps and watermarks if it declares a watermark.
pub(crate) fn source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    watermark_per_row: bool,
    needed: Option<&[bool]>,
) -> Result<crate::catalog::Scan, SqlError> {
    let rows = table_rows(table)?;
    let physical = physical_needed(table, &rows, needed)?;
    let stream = match connector(table)? {
        "filesystem" => filesystem_source(env, table, &rows, &physical)?,
        "nexmark" => crate::nexmark::nexmark_source(env, table, &rows, &physical)?,
        "datagen" => crate::datagen::datagen_source(env, table, &rows)?,
        other @ ("kafka" | "upsert-kafka" | "jdbc" | "postgres") => {
            return Err(connector_error(
                table,
                format!("the connector '{other}' as a SQL source is not supported yet"),
            ))
        }
        other => {
            return Err(connector_error(
                table,
                format!("unknown source connector '{other}'"),
            ))
        }
    };
    let Some(w) = &table.watermark else {
        // A `name AS PROCTIME()` column is the processing-time attribute.
        let proctime = table.columns.iter().find_map(|c| match &c.kind {
            crate::catalog::ColumnKind::Computed(e) if crate::expr::is_proctime(e) => {
                rows.scope.index(&c.name, c.at).ok()
            }
            _ => None,
        });
        return Ok((stream, rows.scope, proctime, proctime.is_some()));
    };
    let rowtime = rows.scope.index(&w.column, w.at)?;
    let compiled = compile(&w.expr, &rows.scope)?;
    if !compiled.ty.is_timestamp() {
        return Err(SqlError::validation(
            format!(
                "the watermark expression is {}, not a timestamp",
                compiled.ty
            ),
            w.at,
        ));
    }
    let generator = SqlWatermarks {
        expr: compiled.eval,
        max: i64::MIN,
        per_row: watermark_per_row,
    };
    let stream = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy::for_generator(move |_| generator.clone()).with_timestamp_assigner(
            move |row: &Row, _| row.values[rowtime].as_i64().unwrap_or(i64::MIN),
        ),
    );
    Ok((stream, rows.scope, Some(rowtime), false))
}

fn filesystem_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    check_options(
        table,
        &[
            "connector",
            "path",
            "format",
            "csv.field-delimiter",
            "csv.ignore-parse-errors",
            "csv.allow-comments",
            "csv.null-literal",
        ],
    )?;
    let path = table
        .option("path")
        .ok_or_else(|| connector_error(table, "the option 'path' is missing"))?;
    match table.option("format") {
        Some("csv") => {}
        Some(other) => {
            return Err(connector_error(
                table,
                format!("the format '{other}' is not supported (supported: csv)"),
            ))
        }
        None => return Err(connector_error(table, "the option 'format' is missing")),
    }
    let delimiter = match table.option("csv.field-delimiter") {
        None => ',',
        Some(d) if d.chars().count() == 1 => d.chars().next().unwrap_or(','),
        Some(d) => {
            return Err(connector_error(
                table,
                format!("'csv.field-delimiter' must be one character, not '{d}'"),
            ))
        }
    };
    let ignore_errors = flag(table, "csv.ignore-parse-errors")?;
    let allow_comments = flag(table, "csv.allow-comments")?;
    let null_literal = table.option("csv.null-literal").map(str::to_string);
    let types: Vec<SqlType> = table.physical().map(|(_, t)| t).collect();
    let nullable = table.nullable();
    let read = physical.to_vec();
    let computed = rows.computed.clone();
    let order = rows.order.clone();
    let name = table.name.clone();
    Ok(env
        .read_text_file(path)
        .uid(&crate::plan::state_uid(&format!(
            "Source[{}; filesystem]",
            table.name.to_lowercase()
        )))
        .process(
            move |line: String, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                if line.is_empty() || allow_comments && line.starts_with('#') {
                    return Ok(());
                }
                let format = CsvFormat {
                    delimiter,
                    null_literal: null_literal.as_deref(),
                    read: &read,
                };
                let parsed = parse_line(&line, &format, &types, &nullable, &computed, &order);
                match parsed {
                    Ok(row) => out.collect(row),
                    Err(_) if ignore_errors => {}
                    Err(e) => {
                        return Err(format!("table '{name}': {e} in line '{line}'").into());
                    }
                }
                Ok(())
            },
        )
        .name(&format!("Source: {}[csv]", table.name)))
}

/// How a CSV line is read.
struct CsvFormat<'a> {
    delimiter: char,
    /// The field text that stands for NULL (Flink's `csv.null-literal`).
    null_literal: Option<&'a str>,
    /// Which fields the query reads; the others are not parsed.
    read: &'a [bool],
}

fn parse_line(
    line: &str,
    format: &CsvFormat<'_>,
    types: &[SqlType],
    nullable: &[bool],
    computed: &[Eval],
    order: &[usize],
) -> Result<Row, String> {
    let fields = split_csv(line, format.delimiter);
    if fields.len() != types.len() {
        return Err(format!(
            "{} fields where the table has {} physical columns",
            fields.len(),
            types.len()
        ));
    }
    let mut values: Vec<Value> = fields
        .iter()
        .zip(types)
        .zip(format.read)
        .map(|((f, t), read)| {
            if !read || format.null_literal == Some(f.as_str()) {
                Ok(Value::Null)
            } else {
                Value::parse(f, *t)
            }
        })
        .collect::<Result<_, _>>()?;
    if let Some(i) =
        (0..values.len()).find(|&i| format.read[i] && values[i].is_null() && !nullable[i])
    {
        return Err(format!("NULL in the NOT NULL column #{}", i + 1));
    }
    let physical = values.len();
    for c in computed {
        let v = c(&values[..physical])?;
        values.push(v);
    }
    Ok(Row::insert(
        order.iter().map(|&i| values[i].clone()).collect::<Vec<_>>(),
    ))
}

/// Writes `stream` (of `schema`) into `table`.
pub(crate) fn sink(
    stream: DataStream<Row>,
    schema: &Scope,
    table: &TableDef,
) -> Result<(), SqlError> {
    let targets: Vec<(String, SqlType)> =
        table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    if targets.len() != schema.columns.len() {
        return Err(SqlError::validation(
            format!(
                "the query has {} columns but table '{}' has {} ({})",
                schema.columns.len(),
                table.name,
                targets.len(),
                targets
                    .iter()
                    .map(|(n, t)| format!("{n} {t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            table.at,
        ));
    }
    let mut casts = Vec::new();
    for ((name, to), (_, from)) in targets.iter().zip(&schema.columns) {
        let implicit = from == to
            || (from.is_numeric() && to.is_numeric())
            || *to == SqlType::String && *from == SqlType::String;
        if !implicit {
            return Err(SqlError::validation(
                format!(
                    "column '{name}' of table '{}' is {to}; the query gives {from}",
                    table.name
                ),
                table.at,
            ));
        }
        casts.push((*from, *to));
    }
    let stream = if casts.iter().all(|(f, t)| f == t) {
        stream
    } else {
        stream.process(
            move |row: Row, _ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, Row>| {
                let values = row
                    .values
                    .into_vec()
                    .into_iter()
                    .zip(&casts)
                    .map(|(v, (f, t))| cast(v, *f, *t))
                    .collect::<Result<Vec<_>, _>>()?;
                out.collect(Row {
                    kind: row.kind,
                    values: values.into(),
                });
                Ok(())
            },
        )
    };
    match connector(table)? {
        "print" => {
            check_options(table, &["connector", "print-identifier", "standard-error"])?;
            let to_err = flag(table, "standard-error")?;
            let sink = match (table.option("print-identifier"), to_err) {
                (Some(id), false) => stream.print_with_prefix(id),
                (Some(id), true) => stream.print_to_err_with_prefix(id),
                (None, false) => stream.print(),
                (None, true) => stream.print_to_err(),
            };
            sink.name(&format!("Sink: {}[print]", table.name));
        }
        "blackhole" => {
            check_options(table, &["connector"])?;
            stream
                .add_sink(weir::sink::DiscardingSink)
                .name(&format!("Sink: {}[blackhole]", table.name));
        }
        other => {
            return Err(connector_error(
                table,
                format!("the connector '{other}' as a SQL sink is not supported yet"),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_split_with_quotes() {
        assert_eq!(
            split_csv("a,\"b,c\",\"d\"\"e\",", ','),
            vec!["a", "b,c", "d\"e", ""]
        );
        assert_eq!(split_csv("1|2", '|'), vec!["1", "2"]);
    }
}

//! The `kafka` connector: a topic as a source (values in `json` or `csv`,
//! read from the group's offsets, the earliest, the latest or a timestamp,
//! without end or to the offsets of the start) and as a sink of inserts
//! (none, at-least-once or exactly-once by Kafka transactions), with
//! Flink's option names. Offsets and transactions are the Kafka
//! connector's (`weir-connectors`), so a SQL job checkpoints and restores
//! them as a DataStream job does.
//!
//! ```sql
//! CREATE TABLE orders (id BIGINT, buyer STRING, amount DECIMAL(10, 2)) WITH (
//!   'connector' = 'kafka', 'topic' = 'orders',
//!   'properties.bootstrap.servers' = '127.0.0.1:9092',
//!   'properties.group.id' = 'report', 'scan.startup.mode' = 'earliest-offset',
//!   'format' = 'json');
//! ```

use weir::prelude::*;
use weir_connectors::kafka::{
    DeliveryGuarantee, KafkaRecord, KafkaSink, KafkaSource, OffsetReset, StartingOffsets,
};

use crate::catalog::TableDef;
use crate::connector::{append_only, check_options, connector_error, RowDecoder, TableRows};
use crate::error::SqlError;
use crate::format::{format_options, RowFormat};
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The options a kafka table takes, besides `properties.*`: its source's
/// and its sink's alike, as a table may be read and written.
fn known_options(table: &TableDef) -> Vec<String> {
    let mut known: Vec<String> = [
        "connector",
        "topic",
        "format",
        "value.format",
        "properties.bootstrap.servers",
        "properties.group.id",
    ]
    .map(String::from)
    .to_vec();
    known.extend(
        [
            "scan.startup.mode",
            "scan.startup.timestamp-millis",
            "scan.bounded.mode",
            "scan.bounded.timestamp-millis",
            "sink.delivery-guarantee",
            "sink.transactional-id-prefix",
            "sink.partitioner",
        ]
        .map(String::from),
    );
    let (key, prefix) = format_key(table);
    known.extend(format_options(
        table.option(key).unwrap_or_default(),
        prefix,
    ));
    known.extend(["key.format", "key.fields", "value.fields-include"].map(String::from));
    known.extend(format_options(
        table.option("key.format").unwrap_or_default(),
        "key.",
    ));
    known.extend(passed_through(table));
    known
}

/// A `kafka` table with `key.fields`: which physical columns the record's
/// key holds (in the key format), and which the value holds (all, or all
/// but the key's with `'value.fields-include' = 'EXCEPT_KEY'`).
struct KeyFields {
    key_format: RowFormat,
    keys: Vec<usize>,
    key_schema: Vec<(String, SqlType)>,
    value_cols: Vec<usize>,
    value_schema: Vec<(String, SqlType)>,
}

impl KeyFields {
    /// The layout of `table`, if it names `key.fields`.
    fn of(table: &TableDef) -> Result<Option<KeyFields>, SqlError> {
        let Some(fields) = table.option("key.fields") else {
            if table.option("key.format").is_some() {
                return Err(connector_error(
                    table,
                    "'key.format' without 'key.fields' (which columns the key holds)",
                ));
            }
            if table.option("value.fields-include").is_some() {
                return Err(connector_error(
                    table,
                    "'value.fields-include' without 'key.fields'",
                ));
            }
            return Ok(None);
        };
        if table.option("key.format").is_none() {
            return Err(connector_error(
                table,
                "'key.fields' needs 'key.format' (the format of the record's key)",
            ));
        }
        let columns: Vec<(String, SqlType)> =
            table.physical().map(|(n, t)| (n.to_string(), t)).collect();
        let keys = fields
            .split(';')
            .map(str::trim)
            .map(|f| {
                columns
                    .iter()
                    .position(|(n, _)| n.eq_ignore_ascii_case(f))
                    .ok_or_else(|| {
                        connector_error(
                            table,
                            format!("'key.fields' names '{f}', which is not a physical column"),
                        )
                    })
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let value_has_key = value_has_key(table)?;
        let value_cols: Vec<usize> = (0..columns.len())
            .filter(|i| value_has_key || !keys.contains(i))
            .collect();
        Ok(Some(KeyFields {
            key_format: RowFormat::of(table, "key.format", "key.")?,
            key_schema: keys.iter().map(|&i| columns[i].clone()).collect(),
            value_schema: value_cols.iter().map(|&i| columns[i].clone()).collect(),
            keys,
            value_cols,
        }))
    }

    /// The physical values of a record whose key and value are `key` and
    /// `value`, reading the columns `read` marks (the others NULL).
    fn decode(
        &self,
        value_format: &RowFormat,
        key: &[u8],
        value: &[u8],
        read: &[bool],
    ) -> Result<Vec<Value>, String> {
        let mut values = vec![Value::Null; read.len()];
        // A column in both the key and the value is taken from the value,
        // as Flink takes it: the key is read for the key-only columns.
        let key_read: Vec<bool> = self
            .keys
            .iter()
            .map(|&i| read[i] && !self.value_cols.contains(&i))
            .collect();
        if key_read.contains(&true) {
            let decoded = self.key_format.decode(key, &self.key_schema, &key_read)?;
            for ((&i, v), r) in self.keys.iter().zip(decoded).zip(&key_read) {
                if *r {
                    values[i] = v;
                }
            }
        }
        let value_read: Vec<bool> = self.value_cols.iter().map(|&i| read[i]).collect();
        let decoded = value_format.decode(value, &self.value_schema, &value_read)?;
        for (&i, v) in self.value_cols.iter().zip(decoded) {
            values[i] = v;
        }
        Ok(values)
    }

    /// A row's record key and value.
    fn encode(&self, value_format: &RowFormat, row: &[Value]) -> (Vec<u8>, Vec<u8>) {
        let key: Vec<Value> = self.keys.iter().map(|&i| row[i].clone()).collect();
        let value: Vec<Value> = self.value_cols.iter().map(|&i| row[i].clone()).collect();
        (
            self.key_format.encode(&self.key_schema, &key).into_bytes(),
            value_format.encode(&self.value_schema, &value).into_bytes(),
        )
    }
}

/// The `properties.*` options: librdkafka's own settings, passed through.
fn passed_through(table: &TableDef) -> impl Iterator<Item = String> + '_ {
    table
        .options
        .keys()
        .filter(|k| k.starts_with("properties."))
        .cloned()
}

/// Which option names the value format (`format` or `value.format`) and
/// the prefix of its options.
fn format_key(table: &TableDef) -> (&'static str, &'static str) {
    if table.option("value.format").is_some() {
        ("value.format", "value.")
    } else {
        ("format", "")
    }
}

fn required<'a>(table: &'a TableDef, key: &str) -> Result<&'a str, SqlError> {
    table
        .option(key)
        .ok_or_else(|| connector_error(table, format!("the option '{key}' is missing")))
}

fn millis(table: &TableDef, key: &str) -> Result<i64, SqlError> {
    required(table, key)?.trim().parse().map_err(|_| {
        connector_error(
            table,
            format!("'{key}' must be milliseconds since the epoch"),
        )
    })
}

/// librdkafka settings from `properties.*` (but the two the connector
/// reads itself).
fn properties(table: &TableDef) -> Vec<(String, String)> {
    table
        .options
        .iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix("properties.")?;
            (key != "bootstrap.servers" && key != "group.id").then(|| (key.to_string(), v.clone()))
        })
        .collect()
}

/// The rows of a kafka table.
pub(crate) fn kafka_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    check_options(
        table,
        &known_options(table)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )?;
    let servers = required(table, "properties.bootstrap.servers")?;
    let topics: Vec<&str> = required(table, "topic")?
        .split(';')
        .map(str::trim)
        .collect();
    let (key, prefix) = format_key(table);
    let format = RowFormat::of(table, key, prefix)?;
    let skip = format.ignores_parse_errors();
    let key_fields = KeyFields::of(table)?;
    let value_format = format.clone();
    let read = physical.to_vec();
    let decode = RowDecoder::new(table, rows, physical, format);
    let metadata = metadata_readers(table)?;
    let uid = crate::plan::state_uid(&format!("Source[{}; kafka]", table.name.to_lowercase()));
    let name = format!("{}[kafka]", table.name);
    if decode.format.is_changelog() {
        if key_fields.is_some() {
            return Err(connector_error(
                table,
                "key fields ('key.fields') with a changelog value format (debezium-json) are not supported",
            ));
        }
        // A change event is one or two rows (an update's -U and +U).
        let source = KafkaSource::new(servers, &topics, move |r: &KafkaRecord<'_>| {
            let meta: Vec<Value> = metadata.iter().map(|read| read(r)).collect();
            decode.rows_with(r.value.unwrap_or_default(), &meta)
        });
        let changes = env
            .add_parallel_source(configured(source, table, skip)?, &name)
            .uid(&uid);
        return Ok(
            changes.flat_map(|rows: Vec<Row>, out: &mut Collector<'_, Row>| {
                rows.into_iter().for_each(|row| out.collect(row))
            }),
        );
    }
    let source = KafkaSource::new(servers, &topics, move |r: &KafkaRecord<'_>| {
        let meta = metadata.iter().map(|read| read(r)).collect();
        let value = r.value.unwrap_or_default();
        match &key_fields {
            None => decode.row_with(value, meta),
            Some(layout) => {
                let mut values =
                    layout.decode(&value_format, r.key.unwrap_or_default(), value, &read)?;
                values.extend(meta);
                decode.finish(values)
            }
        }
    });
    Ok(env
        .add_parallel_source(configured(source, table, skip)?, &name)
        .uid(&uid))
}

/// `source` set up as `table`'s options say (group, start and end
/// offsets, client properties), skipping records it cannot read if
/// `skip`.
fn configured<T: serde::Serialize + serde::de::DeserializeOwned + 'static>(
    mut source: KafkaSource<T>,
    table: &TableDef,
    skip: bool,
) -> Result<KafkaSource<T>, SqlError> {
    if let Some(group) = table.option("properties.group.id") {
        source = source.with_group_id(group);
    }
    let reset = match table.option("properties.auto.offset.reset") {
        Some("latest") => OffsetReset::Latest,
        Some("none") => OffsetReset::None,
        _ => OffsetReset::Earliest,
    };
    let starting = match table.option("scan.startup.mode").unwrap_or("group-offsets") {
        "earliest-offset" => StartingOffsets::Earliest,
        "latest-offset" => StartingOffsets::Latest,
        "group-offsets" => StartingOffsets::Committed(reset),
        "timestamp" => StartingOffsets::Timestamp(millis(table, "scan.startup.timestamp-millis")?),
        other => {
            return Err(connector_error(
                table,
                format!(
                    "'scan.startup.mode' must be earliest-offset, latest-offset, group-offsets or timestamp, not '{other}'"
                ),
            ))
        }
    };
    source = source.with_starting_offsets(starting);
    source = match table.option("scan.bounded.mode").unwrap_or("unbounded") {
        "unbounded" => source,
        "latest-offset" => source.bounded(),
        "timestamp" => source.bounded_by_timestamp(millis(table, "scan.bounded.timestamp-millis")?),
        other => {
            return Err(connector_error(
                table,
                format!(
                "'scan.bounded.mode' must be unbounded, latest-offset or timestamp, not '{other}'"
            ),
            ))
        }
    };
    if skip {
        source = source.skip_malformed();
    }
    for (key, value) in properties(table) {
        source = source.with_property(&key, &value);
    }
    Ok(source)
}

/// How a metadata column's value is read from a record.
type MetadataReader = fn(&KafkaRecord<'_>) -> Value;

/// For each metadata column of `table`, how its value is read from a
/// record (Flink's Kafka metadata: `topic`, `partition`, `offset`,
/// `timestamp`), checked against the column's type.
fn metadata_readers(table: &TableDef) -> Result<Vec<MetadataReader>, SqlError> {
    let mut readers = Vec::new();
    for (name, key, ty, _) in table.metadata() {
        let reader: Option<MetadataReader> = match (key, ty) {
            ("topic", SqlType::String) => Some(|r| Value::string(r.topic)),
            ("partition", SqlType::Int) => Some(|r| Value::Int(r.partition)),
            ("partition", SqlType::BigInt) => Some(|r| Value::BigInt(i64::from(r.partition))),
            ("offset", SqlType::BigInt) => Some(|r| Value::BigInt(r.offset)),
            ("timestamp", SqlType::TimestampLtz) => {
                Some(|r| r.timestamp.map_or(Value::Null, Value::TimestampLtz))
            }
            ("timestamp", SqlType::Timestamp) => {
                Some(|r| r.timestamp.map_or(Value::Null, Value::Timestamp))
            }
            ("topic" | "partition" | "offset" | "timestamp", _) => None,
            (other, _) => {
                return Err(connector_error(
                    table,
                    format!(
                        "'{name}' reads the metadata '{other}', which the kafka connector does not have (topic, partition, offset, timestamp)"
                    ),
                ))
            }
        };
        let reader = reader.ok_or_else(|| {
            connector_error(
                table,
                format!(
                    "'{name}' reads the metadata '{key}', which is {}, not {ty}",
                    match key {
                        "topic" => "STRING",
                        "partition" => "INT (or BIGINT)",
                        "offset" => "BIGINT",
                        _ => "TIMESTAMP_LTZ(3) (or TIMESTAMP(3))",
                    }
                ),
            )
        })?;
        readers.push(reader);
    }
    Ok(readers)
}

/// Writes `stream` (already in the table's columns) to a kafka table.
pub(crate) fn kafka_sink(
    stream: DataStream<Row>,
    table: &TableDef,
    updating: bool,
) -> Result<(), SqlError> {
    check_options(
        table,
        &known_options(table)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )?;
    let servers = required(table, "properties.bootstrap.servers")?;
    let topic = required(table, "topic")?;
    if topic.contains(';') {
        return Err(connector_error(table, "a kafka sink writes one topic"));
    }
    let (key, prefix) = format_key(table);
    let format = RowFormat::of(table, key, prefix)?;
    // A changelog format writes every kind of row.
    if !format.is_changelog() {
        append_only(table, updating)?;
    }
    let columns: Vec<(String, SqlType)> =
        table.physical().map(|(n, t)| (n.to_string(), t)).collect();
    let key_fields = KeyFields::of(table)?;
    if key_fields.is_some() && format.is_changelog() {
        return Err(connector_error(
            table,
            "key fields ('key.fields') with a changelog value format (debezium-json) are not supported",
        ));
    }
    let mut sink = KafkaSink::new(servers, topic, move |row: &Row| match &key_fields {
        None => (
            None,
            format
                .encode_change(row.kind, &columns, &row.values)
                .into_bytes(),
        ),
        Some(layout) => {
            let (key, value) = layout.encode(&format, &row.values);
            (Some(key), value)
        }
    });
    let guarantee = match table.option("sink.delivery-guarantee").unwrap_or("at-least-once") {
        "none" => DeliveryGuarantee::None,
        "at-least-once" => DeliveryGuarantee::AtLeastOnce,
        "exactly-once" => {
            let prefix = required(table, "sink.transactional-id-prefix").map_err(|_| {
                connector_error(
                    table,
                    "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'",
                )
            })?;
            sink = sink.with_transactional_id_prefix(prefix);
            DeliveryGuarantee::ExactlyOnce
        }
        other => {
            return Err(connector_error(
                table,
                format!("'sink.delivery-guarantee' must be none, at-least-once or exactly-once, not '{other}'"),
            ))
        }
    };
    match table.option("sink.partitioner").unwrap_or("default") {
        "default" => {}
        other => {
            return Err(connector_error(
                table,
                format!("'sink.partitioner' = '{other}' is not supported (default is)"),
            ))
        }
    }
    sink = sink.with_delivery_guarantee(guarantee);
    for (key, value) in properties(table) {
        sink = sink.with_property(&key, &value);
    }
    stream
        .add_sink(sink)
        .name(&format!("Sink: {}[kafka]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Sink[{}; kafka]",
            table.name.to_lowercase()
        )));
    Ok(())
}

/// The key columns of an `upsert-kafka` table: its primary key, by
/// physical column index.
fn key_columns(table: &TableDef) -> Result<Vec<usize>, SqlError> {
    if table.primary_key.is_empty() {
        return Err(connector_error(
            table,
            "an upsert-kafka table needs a PRIMARY KEY (…) NOT ENFORCED: its rows are upserted on it",
        ));
    }
    let physical: Vec<&str> = table.physical().map(|(n, _)| n).collect();
    table
        .primary_key
        .iter()
        .map(|k| {
            physical
                .iter()
                .position(|p| p.eq_ignore_ascii_case(k))
                .ok_or_else(|| {
                    connector_error(
                        table,
                        format!("the key column '{k}' is not a physical column"),
                    )
                })
        })
        .collect()
}

/// The options of an `upsert-kafka` table.
fn upsert_options(table: &TableDef) -> Vec<String> {
    let mut known: Vec<String> = [
        "connector",
        "topic",
        "key.format",
        "value.format",
        "value.fields-include",
        "properties.bootstrap.servers",
        "properties.group.id",
        "scan.bounded.mode",
        "sink.delivery-guarantee",
    ]
    .map(String::from)
    .to_vec();
    known.extend(format_options(
        table.option("key.format").unwrap_or_default(),
        "key.",
    ));
    known.extend(format_options(
        table.option("value.format").unwrap_or_default(),
        "value.",
    ));
    known.extend(passed_through(table));
    known
}

/// Whether the value holds every column (`ALL`, the default) or all but
/// the key's (`EXCEPT_KEY`).
fn value_has_key(table: &TableDef) -> Result<bool, SqlError> {
    match table.option("value.fields-include").unwrap_or("ALL") {
        "ALL" => Ok(true),
        "EXCEPT_KEY" => Ok(false),
        other => Err(connector_error(
            table,
            format!("'value.fields-include' must be ALL or EXCEPT_KEY, not '{other}'"),
        )),
    }
}

/// How an `upsert-kafka` table's rows are records: the key columns in the
/// key format, the value's columns (all, or all but the key's) in the
/// value format. Its options are checked on the way.
struct UpsertLayout {
    columns: Vec<(String, SqlType)>,
    /// The key columns, by physical index.
    keys: Vec<usize>,
    key_format: RowFormat,
    value_format: RowFormat,
    key_cols: Vec<(String, SqlType)>,
    /// The value's columns, by physical index.
    value_cols: Vec<usize>,
    value_schema: Vec<(String, SqlType)>,
}

impl UpsertLayout {
    fn of(table: &TableDef) -> Result<UpsertLayout, SqlError> {
        check_options(
            table,
            &upsert_options(table)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )?;
        let keys = key_columns(table)?;
        let value_has_key = value_has_key(table)?;
        let columns: Vec<(String, SqlType)> =
            table.physical().map(|(n, t)| (n.to_string(), t)).collect();
        let key_cols = keys.iter().map(|&i| columns[i].clone()).collect();
        let value_cols: Vec<usize> = (0..columns.len())
            .filter(|i| value_has_key || !keys.contains(i))
            .collect();
        let value_schema = value_cols.iter().map(|&i| columns[i].clone()).collect();
        Ok(UpsertLayout {
            key_format: RowFormat::of(table, "key.format", "key.")?,
            value_format: RowFormat::of(table, "value.format", "value.")?,
            columns,
            keys,
            key_cols,
            value_cols,
            value_schema,
        })
    }
}

/// The rows of an `upsert-kafka` table: each record an upsert of its key
/// (a tombstone its delete), turned into a changelog (`+I` for a new key,
/// `-U`/`+U` for a changed row, `-D` for a delete) by keeping each key's
/// last row, as Flink's `ChangelogNormalize` does.
pub(crate) fn upsert_kafka_source(
    env: &StreamExecutionEnvironment,
    table: &TableDef,
    rows: &TableRows,
    physical: &[bool],
) -> Result<DataStream<Row>, SqlError> {
    let servers = required(table, "properties.bootstrap.servers")?;
    let topics: Vec<&str> = required(table, "topic")?
        .split(';')
        .map(str::trim)
        .collect();
    let UpsertLayout {
        columns,
        keys,
        key_format,
        value_format,
        key_cols,
        value_cols,
        value_schema,
    } = UpsertLayout::of(table)?;
    // Everything is read: a key's row must be whole to be retracted.
    let _ = physical;
    let decode = RowDecoder::new(
        table,
        rows,
        &vec![true; columns.len()],
        value_format.clone(),
    );
    let n = columns.len();
    let key_read = vec![true; key_cols.len()];
    let value_read = vec![true; value_schema.len()];
    let mut source = KafkaSource::new(servers, &topics, move |r: &KafkaRecord<'_>| {
        let key = key_format.decode(r.key.unwrap_or_default(), &key_cols, &key_read)?;
        let mut values = vec![crate::value::Value::Null; n];
        for (k, v) in keys.iter().zip(key) {
            values[*k] = v;
        }
        let kind = match r.value {
            None => crate::value::RowKind::Delete,
            Some(bytes) => {
                let decoded = value_format.decode(bytes, &value_schema, &value_read)?;
                for (i, v) in value_cols.iter().zip(decoded) {
                    values[*i] = v;
                }
                crate::value::RowKind::UpdateAfter
            }
        };
        let mut row = decode.finish(values)?;
        row.kind = kind;
        Ok(row)
    })
    .with_starting_offsets(StartingOffsets::Earliest);
    if let Some(group) = table.option("properties.group.id") {
        source = source.with_group_id(group);
    }
    source = match table.option("scan.bounded.mode").unwrap_or("unbounded") {
        "unbounded" => source,
        "latest-offset" => source.bounded(),
        other => {
            return Err(connector_error(
                table,
                format!("'scan.bounded.mode' must be unbounded or latest-offset, not '{other}'"),
            ))
        }
    };
    for (key, value) in properties(table) {
        source = source.with_property(&key, &value);
    }
    let upserts = env
        .add_parallel_source(source, &format!("{}[upsert-kafka]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Source[{}; upsert-kafka]",
            table.name.to_lowercase()
        )));
    // The key's position in the declared row (computed columns may sit
    // between physical ones).
    let key_positions: Vec<usize> = key_columns(table)?
        .into_iter()
        .map(|k| rows.order.iter().position(|&o| o == k).unwrap_or(k))
        .collect();
    let normalized = upserts
        .key_by(move |r: &Row| {
            key_positions
                .iter()
                .map(|&i| r.values[i].clone())
                .collect::<Vec<_>>()
        })
        .process(ChangelogNormalize { last: None });
    Ok(crate::plan::stateful(
        normalized,
        &format!("ChangelogNormalize[{}]", table.name.to_lowercase()),
    ))
}

/// Each key's last row, turning upserts and deletes into a changelog.
#[derive(Clone)]
struct ChangelogNormalize {
    last: Option<ValueState<Vec<crate::value::Value>>>,
}

impl KeyedProcessFunction<Vec<crate::value::Value>, Row, Row> for ChangelogNormalize {
    fn open(&mut self, ctx: &RuntimeContext) -> FunctionResult {
        self.last = Some(ctx.get_state(&ValueStateDescriptor::new("last-row"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        row: Row,
        _ctx: &mut ProcessContext<'_, Vec<crate::value::Value>>,
        out: &mut Collector<'_, Row>,
    ) -> FunctionResult {
        use crate::value::RowKind;
        let state = self.last.as_ref().ok_or("not open")?;
        let last = state.value()?;
        let emit = |out: &mut Collector<'_, Row>, kind, values: Vec<crate::value::Value>| {
            out.collect(Row { kind, values })
        };
        if row.kind == RowKind::Delete {
            if let Some(old) = last {
                emit(out, RowKind::Delete, old);
                state.clear()?;
            }
            return Ok(());
        }
        let new = row.into_values();
        match last {
            None => emit(out, RowKind::Insert, new.clone()),
            Some(old) if old == new => return Ok(()),
            Some(old) => {
                emit(out, RowKind::UpdateBefore, old);
                emit(out, RowKind::UpdateAfter, new.clone());
            }
        }
        state.update(new)?;
        Ok(())
    }
}

/// Writes a changelog (already in the table's columns) to an
/// `upsert-kafka` table: inserts and updates as records keyed by the
/// primary key, deletes as tombstones; `-U` rows are not written (the
/// `+U` after them replaces the key's row).
pub(crate) fn upsert_kafka_sink(stream: DataStream<Row>, table: &TableDef) -> Result<(), SqlError> {
    let servers = required(table, "properties.bootstrap.servers")?;
    let topic = required(table, "topic")?;
    let UpsertLayout {
        keys,
        key_format,
        value_format,
        key_cols,
        value_cols,
        value_schema,
        ..
    } = UpsertLayout::of(table)?;
    let mut sink = KafkaSink::with_tombstones(servers, topic, move |row: &Row| {
        let key: Vec<crate::value::Value> = keys.iter().map(|&i| row.values[i].clone()).collect();
        let key = key_format.encode(&key_cols, &key).into_bytes();
        if row.kind == crate::value::RowKind::Delete {
            return Ok((Some(key), None));
        }
        let values: Vec<crate::value::Value> =
            value_cols.iter().map(|&i| row.values[i].clone()).collect();
        Ok((
            Some(key),
            Some(value_format.encode(&value_schema, &values).into_bytes()),
        ))
    });
    let guarantee = match table
        .option("sink.delivery-guarantee")
        .unwrap_or("at-least-once")
    {
        "none" => DeliveryGuarantee::None,
        "at-least-once" => DeliveryGuarantee::AtLeastOnce,
        other => {
            let why = format!(
                "'sink.delivery-guarantee' of upsert-kafka must be none or at-least-once (upserts are idempotent), not '{other}'"
            );
            return Err(connector_error(table, why));
        }
    };
    sink = sink.with_delivery_guarantee(guarantee);
    for (key, value) in properties(table) {
        sink = sink.with_property(&key, &value);
    }
    stream
        .filter(|r: &Row| r.kind != crate::value::RowKind::UpdateBefore)
        .add_sink(sink)
        .name(&format!("Sink: {}[upsert-kafka]", table.name))
        .uid(&crate::plan::state_uid(&format!(
            "Sink[{}; upsert-kafka]",
            table.name.to_lowercase()
        )));
    Ok(())
}

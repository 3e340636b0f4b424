//! Files in a format: CSV with a header, JSON lines; malformed lines named
//! by file, line and field.

use std::sync::{Arc, Mutex};

use weir::prelude::*;
use weir::sink::CollectSink;
use weir_connectors::file::FileSource;
use weir_connectors::format::{Csv, JsonLines, RecordFormat};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Order {
    id: String,
    user: String,
    money: f64,
}

fn file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("weir-format-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("writes");
    path
}

fn read<F: RecordFormat<Order> + Clone + Sync>(
    source: FileSource<Order, F>,
) -> Result<Vec<Order>, String> {
    let env = StreamExecutionEnvironment::new();
    let out = Arc::new(Mutex::new(Vec::new()));
    env.add_source(source, "orders")
        .add_sink(CollectSink::new(Arc::clone(&out)));
    env.execute("read").map_err(|e| e.to_string())?;
    let read = out.lock().expect("lock").clone();
    Ok(read)
}

#[test]
fn csv_with_a_header_maps_columns_by_name_and_names_a_bad_field() {
    // Columns in another order than the struct's fields.
    let path = file(
        "orders.csv",
        "user,money,id\nalice,12.5,o1\nbob,lots,o2\ncarol,1,o3\n",
    );
    let err = read(FileSource::new(&path, Csv::new().with_header())).expect_err("malformed");
    assert!(
        err.contains(&format!("'{}' line 3: field 2 ('money')", path.display())),
        "{err}"
    );
    let read =
        read(FileSource::new(&path, Csv::new().with_header()).skip_malformed()).expect("skips");
    let ids: Vec<&str> = read.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["o1", "o3"]);
    assert_eq!(read[0].money, 12.5);
    let _ = std::fs::remove_file(path);
}

#[test]
fn json_lines_in_and_out() {
    let orders = vec![
        Order {
            id: "o1".into(),
            user: "alice".into(),
            money: 1.5,
        },
        Order {
            id: "o2".into(),
            user: "bob".into(),
            money: 2.0,
        },
    ];
    let json = JsonLines::<Order>::new();
    let text: Vec<String> = orders
        .iter()
        .map(|o| String::from_utf8(json.encode(o).expect("encodes")).expect("UTF-8"))
        .collect();
    let path = file("orders.jsonl", &text.join("\n"));
    assert_eq!(
        read(FileSource::new(&path, JsonLines::new())).expect("reads"),
        orders
    );
    let _ = std::fs::remove_file(path);
}

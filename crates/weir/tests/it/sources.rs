//! Built-in sources: sequences, generators, text files, sockets.

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use weir::prelude::*;

use crate::sorted;

#[test]
fn from_sequence_is_the_same_at_any_parallelism() -> anyhow::Result<()> {
    for p in [1, 3, 4] {
        let env = StreamExecutionEnvironment::new();
        env.set_parallelism(p);
        let out = env.from_sequence(-5, 1000).execute_and_collect()?;
        assert_eq!(
            sorted(out),
            (-5..=1000).collect::<Vec<_>>(),
            "parallelism {p}"
        );
    }
    let env = StreamExecutionEnvironment::new();
    assert!(env.from_sequence(5, 4).execute_and_collect()?.is_empty());
    Ok(())
}

#[test]
fn generator_emits_each_index_once() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    env.set_parallelism(3);
    let out = env
        .from_generator(10_000, |i| format!("event-{i}"))
        .execute_and_collect()?;
    let expected: Vec<String> = (0..10_000).map(|i| format!("event-{i}")).collect();
    assert_eq!(sorted(out), sorted(expected));
    Ok(())
}

#[test]
fn generator_rate_limit_is_respected() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let source = GeneratorSource::new(200, |i| i).with_rate_limit(2_000.0);
    env.add_parallel_source(source, "limited")
        .add_sink(DiscardingSink);
    let result = env.execute("rate")?;
    // 200 records at 2000/s cannot take less than ~100 ms.
    assert!(
        result.net_runtime >= Duration::from_millis(90),
        "{:?}",
        result.net_runtime
    );
    Ok(())
}

#[test]
fn read_text_file_emits_lines_without_line_ends() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-text-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("in.txt");
    std::fs::write(&path, "first\r\nsecond\n\nlast without newline")?;
    let env = StreamExecutionEnvironment::new();
    let out = env.read_text_file(&path).execute_and_collect()?;
    assert_eq!(out, vec!["first", "second", "", "last without newline"]);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn invalid_utf8_is_replaced_and_the_line_kept() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("weir-text-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("in.txt");
    std::fs::write(&path, b"good\nbad \xff byte\r\nafter\n")?;
    let env = StreamExecutionEnvironment::new();
    let out = env.read_text_file(&path).execute_and_collect()?;
    assert_eq!(out, vec!["good", "bad \u{fffd} byte", "after"]);
    std::fs::remove_dir_all(&dir)?;

    let (port, server) = serve_bytes(vec![b"one\n\xc3\x28two\nthree\n"])?;
    let env = StreamExecutionEnvironment::new();
    let out = env
        .socket_text_stream("127.0.0.1", port)
        .execute_and_collect()?;
    assert_eq!(out, vec!["one", "\u{fffd}(two", "three"]);
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server panicked"))?;
    Ok(())
}

#[test]
fn a_missing_text_file_is_an_error_naming_it() {
    let env = StreamExecutionEnvironment::new();
    env.read_text_file("/nonexistent/input.txt")
        .add_sink(DiscardingSink);
    let err = env
        .execute("missing")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("/nonexistent/input.txt"), "{err}");
}

/// A server on 127.0.0.1 that sends `payloads`, one per accepted connection,
/// then closes each.
fn serve(payloads: Vec<&'static str>) -> anyhow::Result<(u16, std::thread::JoinHandle<()>)> {
    serve_bytes(payloads.into_iter().map(str::as_bytes).collect())
}

/// Serves each payload to one connection, then closes it.
fn serve_bytes(payloads: Vec<&'static [u8]>) -> anyhow::Result<(u16, std::thread::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let server = std::thread::spawn(move || {
        for payload in payloads {
            if let Ok((mut conn, _)) = listener.accept() {
                let _ = conn.write_all(payload);
            }
        }
    });
    Ok((port, server))
}

#[test]
fn socket_text_stream_reads_lines_until_the_server_closes() -> anyhow::Result<()> {
    let (port, server) = serve(vec!["hello world\r\nsecond line\nno newline at end"])?;
    let env = StreamExecutionEnvironment::new();
    let out = env
        .socket_text_stream("127.0.0.1", port)
        .execute_and_collect()?;
    assert_eq!(out, vec!["hello world", "second line", "no newline at end"]);
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server panicked"))?;
    Ok(())
}

#[test]
fn socket_source_reconnects_as_configured() -> anyhow::Result<()> {
    let (port, server) = serve(vec!["a\n", "b\n", "c\n"])?;
    let env = StreamExecutionEnvironment::new();
    let source = SocketTextSource::new("127.0.0.1", port)
        .with_max_retry(3)
        .with_retry_delay(Duration::from_millis(10));
    let out = env.socket_text_stream_with(source).execute_and_collect()?;
    // Flink's rule: reconnect while fewer than max_retry attempts were made.
    assert_eq!(out, vec!["a", "b", "c"]);
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server panicked"))?;
    Ok(())
}

#[test]
fn socket_connection_refused_is_a_clear_error() -> anyhow::Result<()> {
    // A socket bound but not listening: connections to its port are
    // refused, and no other process can take the port while it is held.
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    held.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
    let port = held
        .local_addr()?
        .as_socket()
        .ok_or_else(|| anyhow::anyhow!("not an IP socket"))?
        .port();
    let env = StreamExecutionEnvironment::new();
    env.socket_text_stream("127.0.0.1", port)
        .add_sink(DiscardingSink);
    let err = env
        .execute("refused")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains(&format!("cannot connect to socket 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(err.contains("Source: Socket Stream"), "{err}");
    // Refused: nobody listens, and the hint says how to.
    assert!(err.contains(&format!("e.g. `nc -lk {port}`")), "{err}");
    Ok(())
}

/// A user source: counts down, and says where it is.
#[derive(Clone)]
struct Countdown(u32);

impl SourceFunction<u32> for Countdown {
    fn poll_next(&mut self, ctx: &mut SourceContext<'_, u32>) -> FunctionResult<SourceStatus> {
        while self.0 > 0 && !ctx.is_full() {
            ctx.collect_with_timestamp(self.0, i64::from(self.0) * 1000);
            self.0 -= 1;
        }
        Ok(if self.0 == 0 {
            SourceStatus::Finished
        } else {
            SourceStatus::More
        })
    }
}

#[test]
fn user_sources_and_their_timestamps() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::new();
    let out = env
        .add_source(Countdown(3000), "countdown")
        .process(
            |x: u32, ctx: &mut ProcessContext<'_>, out: &mut Collector<'_, (u32, Option<i64>)>| {
                out.collect((x, ctx.timestamp()));
                Ok(())
            },
        )
        .execute_and_collect()?;
    assert_eq!(out.len(), 3000);
    assert_eq!(out[0], (3000, Some(3_000_000)));
    assert_eq!(out[2999], (1, Some(1000)));
    Ok(())
}

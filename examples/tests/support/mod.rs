//! What the examples' test binaries share.

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The next connection to `listener`, or a failed test after a minute
/// (never a test that hangs because a job did not connect).
pub fn accept_within(listener: &TcpListener) -> TcpStream {
    listener.set_nonblocking(true).expect("non-blocking");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                conn.set_nonblocking(false).expect("blocking");
                return conn;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the job never connected");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

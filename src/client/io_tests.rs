//! The client socket over real TCP connections: bytes read ahead, a
//! close noticed by a flush, bounded reading.

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use super::*;

/// A connected pair: the client's socket, and the server's, wrapped.
async fn pair() -> (TcpStream, ClientIo) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (client, ClientIo::new(server))
}

async fn flush(io: &mut ClientIo) -> io::Result<()> {
    std::future::poll_fn(|cx| Pin::new(&mut *io).poll_flush(cx)).await
}

#[tokio::test]
async fn bytes_read_ahead_by_a_flush_are_read_in_order() {
    let (mut client, mut io) = pair().await;
    client.write_all(b"first").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&mut io).await.unwrap();
    assert_eq!(io.ahead.len(), 5);
    client.write_all(b" second").await.unwrap();
    let mut got = Vec::new();
    while got.len() < 12 {
        let mut buf = [0u8; 3];
        let n = io.read(&mut buf).await.unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"first second");
}

#[tokio::test]
async fn a_client_that_left_is_an_error_if_the_server_does_not_read() {
    let (mut client, mut io) = pair().await;
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    drop(client);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // The flush that sees the close lets the server read first...
    flush(&mut io).await.unwrap();
    assert_eq!(io.peer, Peer::Closed);
    // ...and the next one, with nothing read in between, fails.
    let e = flush(&mut io).await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted);
}

#[tokio::test]
async fn a_server_that_reads_learns_of_the_close_by_reading() {
    let (mut client, mut io) = pair().await;
    client.write_all(b"abc").await.unwrap();
    drop(client);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&mut io).await.unwrap();
    let mut all = Vec::new();
    io.read_to_end(&mut all).await.unwrap();
    assert_eq!(all, b"abc");
    // Told by the read: flushes go on succeeding.
    flush(&mut io).await.unwrap();
    flush(&mut io).await.unwrap();
}

#[tokio::test]
async fn reading_ahead_is_bounded() {
    let (mut client, mut io) = pair().await;
    client.write_all(&vec![b'x'; 3 * MAX_AHEAD]).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    flush(&mut io).await.unwrap();
    assert_eq!(io.ahead.len(), MAX_AHEAD);
    assert_eq!(io.peer, Peer::Open);
}

//! A client's socket as the HTTP server sees it, plus one thing: a client
//! that leaves is noticed whatever the server is doing, so that the work
//! done for it (upstream calls, retries) stops at once.
//!
//! hyper's HTTP/1 server notices a client leaving a busy connection by
//! reading from it, which it does only while its own read buffer is empty.
//! A client that sent more than its request (a CRLF after the body, as
//! some clients do, or a pipelined request) and then left went unnoticed
//! until the response was written: its handler ran to the end, upstream
//! calls and retries included.
//!
//! The server flushes its socket on every turn of its loop, and the flush
//! here reads ahead what the client sent (bounded), keeping the bytes for
//! the server's next read, and registers to be woken when more comes.
//! When the client has closed the connection, the server learns it at its
//! next read, as it would have; if it does not read by its next flush,
//! that flush fails, which ends the connection and drops the request's
//! handler and response body.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{Buf, BytesMut};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};

/// The most bytes read ahead of the server.
const MAX_AHEAD: usize = 64 * 1024;

/// What became of the client's side of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Open,
    /// The client closed its side.
    Closed,
    /// Reading failed (a reset, most often).
    Failed(io::ErrorKind),
}

/// A client connection's socket.
#[derive(Debug)]
pub(crate) struct ClientIo {
    stream: TcpStream,
    /// Bytes read by a flush, not yet read by the server.
    ahead: BytesMut,
    peer: Peer,
    /// The server has been told how the connection ended.
    told: bool,
}

impl ClientIo {
    /// Wrap an accepted connection.
    pub(crate) fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            ahead: BytesMut::new(),
            peer: Peer::Open,
            told: false,
        }
    }

    /// Read what the client sent, up to the bound, to see whether it has
    /// left; registers to be woken when there is more.
    fn read_ahead(&mut self, cx: &mut Context<'_>) {
        while self.peer == Peer::Open && self.ahead.len() < MAX_AHEAD {
            match self.stream.poll_read_ready(cx) {
                Poll::Pending => return,
                Poll::Ready(Err(e)) => self.peer = Peer::Failed(e.kind()),
                Poll::Ready(Ok(())) => {
                    let mut chunk = [0u8; 4096];
                    let room = (MAX_AHEAD - self.ahead.len()).min(chunk.len());
                    match self.stream.try_read(&mut chunk[..room]) {
                        Ok(0) => self.peer = Peer::Closed,
                        Ok(n) => self.ahead.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => self.peer = Peer::Failed(e.kind()),
                    }
                }
            }
        }
    }
}

impl AsyncRead for ClientIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.ahead.is_empty() {
            let n = this.ahead.len().min(buf.remaining());
            buf.put_slice(&this.ahead[..n]);
            this.ahead.advance(n);
            return Poll::Ready(Ok(()));
        }
        match this.peer {
            Peer::Open => Pin::new(&mut this.stream).poll_read(cx, buf),
            Peer::Closed => {
                this.told = true;
                Poll::Ready(Ok(()))
            }
            Peer::Failed(kind) => {
                this.told = true;
                Poll::Ready(Err(kind.into()))
            }
        }
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(Pin::new(&mut this.stream).poll_flush(cx))?;
        let was_open = this.peer == Peer::Open;
        this.read_ahead(cx);
        match this.peer {
            Peer::Open => Poll::Ready(Ok(())),
            _ if this.told => Poll::Ready(Ok(())),
            _ if was_open => {
                // Give the server one turn to read it.
                cx.waker().wake_by_ref();
                Poll::Ready(Ok(()))
            }
            _ => {
                this.told = true;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "the client closed the connection",
                )))
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "io_tests.rs"]
mod tests;

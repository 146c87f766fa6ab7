//! One client connection's TLS handshake, run in the connection's own task
//! (never in the accept loop, so a slow or hostile client delays no one
//! else) and bounded: the handshake within its timeout, then the first
//! byte of the first request within the header timeout, as on a plain
//! connection. A client that stalls at either point is disconnected and
//! its connection slot freed; a shutdown closes it at once.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use bytes::{Buf, Bytes, BytesMut};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf},
    sync::watch,
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

use crate::client::ClientIo;

/// A decrypted connection as the HTTP server sees it.
pub(crate) type TlsIo = Prefixed<TlsStream<ClientIo>>;

/// Size of the first read after the handshake (what hyper reads first is
/// usually smaller; the rest stays in rustls' buffer).
const FIRST_READ: usize = 4096;

/// Complete the handshake within `handshake`, then wait up to
/// `first_request` for the client's first bytes of HTTP. `None` when the
/// client failed, stalled or left, or augur is stopping: the connection is
/// then dropped, which closes it.
pub(crate) async fn handshake(
    acceptor: &TlsAcceptor,
    io: ClientIo,
    handshake: Duration,
    first_request: Duration,
    stopping: &mut watch::Receiver<bool>,
) -> Option<TlsIo> {
    let failed = |reason: &'static str| {
        metrics::counter!("augur_tls_handshake_failures_total", "reason" => reason).increment(1);
    };
    let mut tls = tokio::select! {
        done = tokio::time::timeout(handshake, acceptor.accept(io)) => match done {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                failed("error");
                tracing::debug!(error = %e, "TLS handshake failed");
                return None;
            }
            Err(_) => {
                failed("timeout");
                tracing::debug!("TLS handshake timed out");
                return None;
            }
        },
        _ = stopping.changed() => return None,
    };
    // hyper waits for a request for as long as it takes: the first bytes
    // are read here, under the header timeout, and handed to it first.
    let mut head = BytesMut::with_capacity(FIRST_READ);
    tokio::select! {
        read = tokio::time::timeout(first_request, tls.read_buf(&mut head)) => match read {
            Ok(Ok(n)) if n > 0 => {}
            _ => return None,
        },
        _ = stopping.changed() => return None,
    }
    Some(Prefixed {
        head: head.freeze(),
        io: tls,
    })
}

/// `io`, with `head` (bytes already read from it) read first.
#[derive(Debug)]
pub(crate) struct Prefixed<T> {
    head: Bytes,
    io: T,
}

impl<T: AsyncRead + Unpin> AsyncRead for Prefixed<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.head.has_remaining() {
            let n = this.head.len().min(buf.remaining());
            buf.put_slice(&this.head[..n]);
            this.head.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Prefixed<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

//! The socket of an upstream connection, noting whether the upstream sent
//! anything since a request was written on it.
//!
//! A request written on a kept-alive connection that then closes or
//! resets before one byte of an answer most likely met a connection the
//! upstream had closed as idle (or never accepted) while the request was
//! on its way: its application never saw it, and it can be sent again on
//! a new connection (see `resend.rs`). Once a byte has arrived, the
//! upstream was answering: that request is never sent again.

use std::{
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};

/// A TCP connection to the upstream that notes each read that brought
/// bytes.
pub(super) struct Socket {
    tcp: TcpStream,
    heard: Heard,
}

/// Whether the upstream sent anything since [`Heard::clear`]; shared by a
/// connection's socket and the lease holding it.
#[derive(Clone, Default)]
pub(super) struct Heard(Arc<AtomicBool>);

impl Heard {
    /// Forget what was heard (a new request is about to be written).
    pub(super) fn clear(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    /// Whether a byte arrived since [`Heard::clear`].
    pub(super) fn any(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Socket {
    /// `tcp`, and what it hears.
    pub(super) fn new(tcp: TcpStream) -> (Self, Heard) {
        let heard = Heard::default();
        let socket = Self {
            tcp,
            heard: heard.clone(),
        };
        (socket, heard)
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.heard.0.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// Whether `e`, a request's failure on its connection, says the
/// connection closed or was reset (rather than the request's own body
/// failing, or the upstream sending something that is not HTTP).
pub(super) fn closed_or_reset(e: &hyper::Error) -> bool {
    use std::error::Error as _;
    if e.is_user() || e.is_parse() {
        return false;
    }
    if e.is_incomplete_message() {
        return true;
    }
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return matches!(
                io.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
            );
        }
        source = s.source();
    }
    false
}

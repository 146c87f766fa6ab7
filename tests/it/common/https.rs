//! An HTTPS client for tests of augur's TLS listeners: rustls (ring) and
//! hyper's connection API, so a test chooses the ALPN offer, keeps one
//! connection for as long as it likes, and sees the certificate the server
//! presented. Session resumption is off: every connection is a full
//! handshake.

use std::{net::SocketAddr, path::Path, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::{
    ClientConfig, RootCertStore,
    client::Resumption,
    pki_types::{CertificateDer, ServerName, pem::PemObject},
};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A client config trusting only the CA in `ca` (PEM), offering `alpn`.
pub fn client_config(ca: &Path, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = Resumption::disabled();
    Arc::new(config)
}

/// The DER of the first certificate in the PEM file at `path`.
pub fn cert_der(path: &Path) -> Vec<u8> {
    CertificateDer::from_pem_file(path).unwrap().to_vec()
}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// One HTTPS connection, HTTP/1.1 or HTTP/2 as ALPN chose.
pub struct Conn {
    sender: Sender,
    authority: String,
    /// The protocol ALPN chose, if any.
    pub alpn: Option<Vec<u8>>,
    /// The certificate the server presented (DER).
    pub peer: Vec<u8>,
}

/// A response: status, headers and the whole body.
pub struct Reply {
    pub status: http::StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Connect to `addr` as `localhost` and complete the handshake.
pub async fn connect(addr: SocketAddr, config: Arc<ClientConfig>) -> Result<Conn, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let session = tls.get_ref().1;
    let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
    let peer = session
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .unwrap_or_default();
    let io = TokioIo::new(tls);
    let sender = if alpn.as_deref() == Some(b"h2") {
        let (send, conn) = http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        Sender::H2(send)
    } else {
        let (send, conn) = http1::handshake(io).await.map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        Sender::H1(send)
    };
    Ok(Conn {
        sender,
        authority: format!("localhost:{}", addr.port()),
        alpn,
        peer,
    })
}

impl Conn {
    /// Send a request (a JSON body when `body` is set) and read the whole
    /// answer; an error for anything that goes wrong on the way.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, String> {
        let bytes = body.map(|b| b.to_string()).unwrap_or_default();
        let builder = http::Request::builder()
            .method(method)
            .header("content-type", "application/json");
        let response = match &mut self.sender {
            Sender::H1(send) => {
                let req = builder
                    .uri(path)
                    .header("host", &self.authority)
                    .body(Full::new(Bytes::from(bytes)))
                    .unwrap();
                send.ready().await.map_err(|e| e.to_string())?;
                send.send_request(req).await
            }
            Sender::H2(send) => {
                let req = builder
                    .uri(format!("https://{}{path}", self.authority))
                    .body(Full::new(Bytes::from(bytes)))
                    .unwrap();
                send.ready().await.map_err(|e| e.to_string())?;
                send.send_request(req).await
            }
        }
        .map_err(|e| e.to_string())?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// `send`, and an error unless the status is 200.
    pub async fn ok(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, String> {
        let reply = self.send(method, path, body).await?;
        if reply.status != 200 {
            return Err(format!(
                "{method} {path}: {} {}",
                reply.status,
                String::from_utf8_lossy(&reply.body)
            ));
        }
        Ok(reply)
    }
}

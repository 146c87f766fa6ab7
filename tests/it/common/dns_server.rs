//! An authoritative DNS server for the tests, on 127.0.0.1 (UDP and TCP,
//! one port chosen by the OS), whose answers a test changes while it
//! runs: A / AAAA records and SRV records per name, and a switch that
//! makes it stop answering.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use hickory_server::{
    Server,
    net::runtime::Time,
    proto::{
        op::{Header, HeaderCounts, Metadata, ResponseCode},
        rr::{
            Name, RData, Record, RecordType,
            rdata::{A, AAAA, SRV},
        },
    },
    server::{Request, RequestHandler, ResponseHandler, ResponseInfo},
    zone_handler::MessageResponseBuilder,
};

#[derive(Default)]
struct Zone {
    /// Name (lowercase, with the final dot) to its addresses.
    addresses: HashMap<String, Vec<IpAddr>>,
    /// Name to its SRV targets and ports.
    services: HashMap<String, Vec<(String, u16)>>,
}

#[derive(Clone, Default)]
struct Answers {
    zone: Arc<Mutex<Zone>>,
    silent: Arc<AtomicBool>,
    queries: Arc<AtomicU64>,
}

/// The running server.
pub struct DnsServer {
    pub addr: SocketAddr,
    answers: Answers,
    _server: Server<Answers>,
}

fn key(name: &str) -> String {
    let mut k = name.to_ascii_lowercase();
    if !k.ends_with('.') {
        k.push('.');
    }
    k
}

impl DnsServer {
    /// A server on 127.0.0.1, UDP and TCP on one port, answering nothing
    /// yet (every name: no such name).
    pub async fn start() -> Self {
        let answers = Answers::default();
        for _ in 0..20 {
            let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let addr = udp.local_addr().unwrap();
            let Ok(tcp) = tokio::net::TcpListener::bind(addr).await else {
                continue;
            };
            let mut server = Server::new(answers.clone());
            server.register_socket(udp);
            server.register_listener(tcp, Duration::from_secs(5), 4096);
            return Self {
                addr,
                answers,
                _server: server,
            };
        }
        panic!("no port free for both UDP and TCP");
    }

    /// `name`'s A / AAAA records from now on.
    pub fn set_addresses(&self, name: &str, ips: &[IpAddr]) {
        let mut zone = self.answers.zone.lock().unwrap();
        zone.addresses.insert(key(name), ips.to_vec());
    }

    /// `name`'s SRV records from now on: each target and port.
    pub fn set_services(&self, name: &str, targets: &[(&str, u16)]) {
        let targets = targets.iter().map(|(t, p)| (key(t), *p)).collect();
        let mut zone = self.answers.zone.lock().unwrap();
        zone.services.insert(key(name), targets);
    }

    /// Stop answering (queries get no answer), or answer again.
    pub fn set_silent(&self, silent: bool) {
        self.answers.silent.store(silent, Ordering::SeqCst);
    }

    /// Queries received so far.
    pub fn queries(&self) -> u64 {
        self.answers.queries.load(Ordering::SeqCst)
    }
}

impl Answers {
    fn records(&self, name: &Name, kind: RecordType) -> Option<Vec<Record>> {
        let zone = self.zone.lock().unwrap();
        let k = key(&name.to_ascii());
        let rdata: Vec<RData> = match kind {
            RecordType::A | RecordType::AAAA => zone
                .addresses
                .get(&k)?
                .iter()
                .filter_map(|ip| match (ip, kind) {
                    (IpAddr::V4(v4), RecordType::A) => Some(RData::A(A(*v4))),
                    (IpAddr::V6(v6), RecordType::AAAA) => Some(RData::AAAA(AAAA(*v6))),
                    _ => None,
                })
                .collect(),
            RecordType::SRV => zone
                .services
                .get(&k)?
                .iter()
                .map(|(target, port)| {
                    let target = Name::from_ascii(target).unwrap();
                    RData::SRV(SRV::new(0, 1, *port, target))
                })
                .collect(),
            _ => Vec::new(),
        };
        Some(
            rdata
                .into_iter()
                .map(|r| Record::from_rdata(name.clone(), 0, r))
                .collect(),
        )
    }
}

#[async_trait::async_trait]
impl RequestHandler for Answers {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response_handle: R,
    ) -> ResponseInfo {
        self.queries.fetch_add(1, Ordering::SeqCst);
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.authoritative = true;
        let failed = ResponseInfo::from(Header {
            metadata,
            counts: HeaderCounts::default(),
        });
        if self.silent.load(Ordering::SeqCst) {
            // No answer: the client times out.
            tokio::time::sleep(Duration::from_secs(30)).await;
            return failed;
        }
        let Some(query) = request.queries.queries().first() else {
            return failed;
        };
        let name: Name = query.name().into();
        let builder = MessageResponseBuilder::from_message_request(request);
        let sent = match self.records(&name, query.query_type()) {
            Some(records) => {
                let response = builder.build(metadata, records.iter(), [], [], []);
                response_handle.send_response(response).await
            }
            None => {
                let response = builder.error_msg(&request.metadata, ResponseCode::NXDomain);
                response_handle.send_response(response).await
            }
        };
        sent.unwrap_or(failed)
    }
}

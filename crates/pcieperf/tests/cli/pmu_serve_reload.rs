//! `pcieperf pmu serve --web.config.file` follows changes of the file and of the certificate and
//! key it names without a restart, as the exporter-toolkit does: a removed user or a changed
//! password gets 401 on the next request, a rotated certificate is presented on the next TLS
//! connection, and a file that stops loading fails closed (handshakes refused, requests 500)
//! with one stderr line naming it, until it loads again. The certificates are the committed
//! test pairs in `tls/` (see its README).

use crate::common;
use common::{scratch_dir, serve, tls_dir, Server};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn cert_der(file: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(tls_dir().join(file)).unwrap()
}

/// Replace `path` with `text` as a careful writer does (a temporary file, then a rename).
fn replace(path: &Path, text: &[u8]) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Trusts exactly the two test certificates, pinned: they are their own CAs (as Prometheus
/// trusts one with `ca_file`), which webpki refuses as a server's certificate.
#[derive(Debug)]
struct Pinned(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if ["localhost.crt", "rotated.crt"]
            .iter()
            .any(|f| cert_der(f) == *end_entity)
        {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("not a test certificate".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client that trusts both test certificates.
fn client() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned(provider)))
            .with_no_client_auth(),
    )
}

/// `GET /metrics` over TLS with `user:password`: the status line and the certificate the server
/// presented, or why the connection failed.
fn get(addr: &str, credentials: &str) -> io::Result<(String, CertificateDer<'static>)> {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(client(), name).map_err(io::Error::other)?;
    let mut sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    let cert = conn.peer_certificates().expect("a server certificate")[0]
        .clone()
        .into_owned();
    let b64 = basic(credentials);
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    write!(
        tls,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {b64}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = Vec::new();
    match tls.read_to_end(&mut text) {
        Ok(_) => {}
        // Closed without a close_notify after the answer: what came is the answer.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !text.is_empty() => {}
        Err(e) => return Err(e),
    }
    let text = String::from_utf8_lossy(&text);
    Ok((text.lines().next().unwrap_or("").to_string(), cert))
}

/// `Authorization: Basic` of the credentials the tests send.
fn basic(credentials: &str) -> &'static str {
    match credentials {
        "prometheus:s3cret" => "cHJvbWV0aGV1czpzM2NyZXQ=",
        "prometheus:n3w" => "cHJvbWV0aGV1czpuM3c=",
        "alice:a1ice" => "YWxpY2U6YTFpY2U=",
        other => panic!("no base64 for {other}"),
    }
}

/// `GET /metrics` over plain HTTP with `headers`: the status line.
fn plain_get(addr: &str, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
    );
    let mut text = Vec::new();
    s.read_to_end(&mut text).unwrap();
    String::from_utf8_lossy(&text).lines().next().unwrap_or("").to_string()
}

/// The lines of the server's stderr holding `what`, waiting up to 5 s for `at_least` of them (the
/// server writes its line before it refuses the request, but the test reads its stderr on a thread).
fn told(server: &Server, what: &str, at_least: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let lines: Vec<String> = server
            .stderr
            .lock()
            .unwrap()
            .lines()
            .filter(|l| l.contains(what))
            .map(String::from)
            .collect();
        if lines.len() >= at_least || start.elapsed() > Duration::from_secs(5) {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn web_yml(users: &[(&str, &str)]) -> String {
    let mut y = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n".to_string();
    for (user, password) in users {
        y += &format!("  {user}: '{}'\n", bcrypt::hash(password, 4).unwrap());
    }
    y
}

#[test]
fn users_certificates_and_a_broken_file_are_followed_without_a_restart() {
    let dir = scratch_dir("serve-reload");
    std::fs::copy(tls_dir().join("localhost.crt"), dir.join("server.crt")).unwrap();
    std::fs::copy(tls_dir().join("localhost.key"), dir.join("server.key")).unwrap();
    let config = dir.join("web.yml");
    std::fs::write(&config, web_yml(&[("prometheus", "s3cret"), ("alice", "a1ice")])).unwrap();
    let server = serve(&[
        "--source",
        "sim",
        "-I",
        "200",
        "--web.config.file",
        config.to_str().unwrap(),
    ]);
    let addr = &server.addr;
    let status = |credentials: &str| get(addr, credentials).unwrap().0;
    for credentials in ["prometheus:s3cret", "alice:a1ice", "alice:a1ice"] {
        assert_eq!(status(credentials), "HTTP/1.1 200 OK", "{credentials}");
    }
    assert_eq!(get(addr, "alice:a1ice").unwrap().1, cert_der("localhost.crt"));

    // (a) alice removed and prometheus's password changed, the file rewritten in place: her
    // remembered pass and the old password are refused on the next request.
    std::fs::write(&config, web_yml(&[("prometheus", "n3w")])).unwrap();
    assert_eq!(status("alice:a1ice"), "HTTP/1.1 401 Unauthorized");
    assert_eq!(status("prometheus:s3cret"), "HTTP/1.1 401 Unauthorized");
    assert_eq!(status("prometheus:n3w"), "HTTP/1.1 200 OK");
    let path = config.display().to_string();
    assert_eq!(told(&server, "changed, re-read", 1).len(), 1, "{:?}", server.stderr);
    assert!(told(&server, "changed, re-read", 1)[0].contains(&path));

    // (b) The certificate and key rotated (each replaced by a rename): a new connection is
    // shown the new certificate.
    replace(
        &dir.join("server.key"),
        &std::fs::read(tls_dir().join("rotated.key")).unwrap(),
    );
    replace(
        &dir.join("server.crt"),
        &std::fs::read(tls_dir().join("rotated.crt")).unwrap(),
    );
    let (s, cert) = get(addr, "prometheus:n3w").unwrap();
    assert_eq!((s.as_str(), &cert), ("HTTP/1.1 200 OK", &cert_der("rotated.crt")));

    // (c) Broken YAML: handshakes are refused, however many come, and stderr says so once.
    std::fs::write(&config, "basic_auth_users: [\n").unwrap();
    for _ in 0..3 {
        assert!(get(addr, "prometheus:n3w").is_err(), "served with a broken web config");
    }
    let warned = told(&server, "warning: web config", 1);
    assert_eq!(warned.len(), 1, "one line for one change: {warned:?}");
    assert!(warned[0].contains(&path), "{warned:?}");
    // Fixed: served again.
    std::fs::write(&config, web_yml(&[("prometheus", "n3w")])).unwrap();
    assert_eq!(status("prometheus:n3w"), "HTTP/1.1 200 OK");

    // A file without TLS would switch the listener to plain HTTP: refused until TLS is back.
    std::fs::write(&config, "basic_auth_users:\n").unwrap();
    assert!(get(addr, "prometheus:n3w").is_err());
    let warned = told(&server, "warning: web config", 2);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[1].contains("needs a restart"), "{warned:?}");
    std::fs::write(&config, web_yml(&[("prometheus", "n3w")])).unwrap();
    assert_eq!(status("prometheus:n3w"), "HTTP/1.1 200 OK");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_broken_web_config_answers_requests_500_until_it_loads() {
    let dir = scratch_dir("serve-reload-plain");
    let config = dir.join("web.yml");
    let users = format!(
        "basic_auth_users:\n  prometheus: '{}'\n",
        bcrypt::hash("s3cret", 4).unwrap()
    );
    std::fs::write(&config, &users).unwrap();
    let server = serve(&[
        "--source",
        "sim",
        "-I",
        "200",
        "--web.config.file",
        config.to_str().unwrap(),
    ]);
    let get = |headers: &str| plain_get(&server.addr, headers);
    // prometheus:s3cret
    let auth = "Authorization: Basic cHJvbWV0aGV1czpzM2NyZXQ=\r\n";
    assert_eq!(get(auth), "HTTP/1.1 200 OK");
    std::fs::write(&config, "basic_auth_users:\n  prometheus: plaintext\n").unwrap();
    assert_eq!(get(auth), "HTTP/1.1 500 Internal Server Error");
    assert_eq!(get(""), "HTTP/1.1 500 Internal Server Error", "fails closed");
    let warned = told(&server, "warning: web config", 1);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains(&format!(
            "{}: basic_auth_users.prometheus: not a bcrypt hash",
            config.display()
        )),
        "{warned:?}"
    );
    std::fs::write(&config, &users).unwrap();
    assert_eq!(get(auth), "HTTP/1.1 200 OK");
    assert_eq!(get(""), "HTTP/1.1 401 Unauthorized");
    std::fs::remove_dir_all(&dir).unwrap();
}

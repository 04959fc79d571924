//! `--web.config.file`: TLS and basic authentication configured as Prometheus exporters are
//! (the exporter-toolkit's YAML: `tls_server_config: {cert_file, key_file}`,
//! `basic_auth_users: {NAME: BCRYPT-HASH}`), so one file serves node_exporter and pcieperf.
//! What the toolkit offers beyond that (client certificates, TLS versions, ciphers, headers) is
//! refused by name rather than ignored. A loaded config remembers the versions of the files it
//! was read from, so the server can re-read it when one changes (`live`).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::versions::{Reading, Versions};

/// What the web config asks for: TLS (a server configuration) and the users who may read.
pub struct WebConfig {
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// User name to bcrypt hash; empty: no authentication.
    pub(crate) users: BTreeMap<String, String>,
    /// The file it was read from and the versions of the files read; `None`: not from a file.
    pub(crate) file: Option<(PathBuf, Versions)>,
}

impl WebConfig {
    /// Plain HTTP, no authentication.
    pub fn none() -> WebConfig {
        WebConfig {
            tls: None,
            users: BTreeMap::new(),
            file: None,
        }
    }

    /// Whether connections are served over TLS (`https`).
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether readers must authenticate (basic_auth_users names at least one).
    pub fn authenticates(&self) -> bool {
        !self.users.is_empty()
    }
}

/// Why a web config was refused: the file's path and what is wrong with it (the caller adds
/// the option that named the file).
#[derive(Debug)]
pub struct WebConfigError(String);

impl std::fmt::Display for WebConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WebConfigError {}

/// The keys the exporter-toolkit knows that pcieperf does not do.
const UNSUPPORTED_TLS: &[&str] = &[
    "client_auth_type",
    "client_ca_file",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
    "cert",
    "key",
];

/// A YAML node as far as the web config needs one.
#[derive(Debug, PartialEq)]
enum Node {
    Null,
    Text(String),
    Map(Vec<(String, Node)>),
    List,
}

pub(crate) fn bad(path: &Path, what: impl std::fmt::Display) -> WebConfigError {
    WebConfigError(format!("{}: {what}", path.display()))
}

/// Read a small regular file whole through the bounded reader: at most 1 MiB (a definition
/// file's limit), opened without blocking (a FIFO or device is refused, not waited on).
fn read_small(reading: &mut Reading, path: &Path) -> Result<Vec<u8>, String> {
    reading
        .read(path, pcie_output::read::Limit::DEFINITION)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Parse YAML text into [`Node`]s (block or flow style, quoted or plain scalars; anchors and
/// tags are not used by web configs and are refused).
fn parse_yaml(text: &str) -> Result<Node, String> {
    let mut events = Parser::new_from_str(text).map(|r| r.map(|(e, span)| (e, span.start.line())));
    let mut docs = Vec::new();
    while let Some(next) = events.next() {
        let (event, line) = next.map_err(|e| e.to_string())?;
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => docs.push(node(&mut events, None)?),
            other => return Err(format!("line {line}: unexpected {other:?}")),
        }
    }
    match docs.len() {
        0 => Ok(Node::Null),
        1 => Ok(docs.pop().expect("one document")),
        n => Err(format!("{n} YAML documents; expected one")),
    }
}

/// The node that starts with the next event (or with `first` when given).
fn node<'a, I>(events: &mut I, first: Option<(Event<'a>, usize)>) -> Result<Node, String>
where
    I: Iterator<Item = Result<(Event<'a>, usize), saphyr_parser::ScanError>>,
{
    let (event, line) = match first {
        Some(f) => f,
        None => events
            .next()
            .ok_or("the document ends early")?
            .map_err(|e| e.to_string())?,
    };
    match event {
        Event::Scalar(v, style, anchor, tag) => {
            if anchor != 0 || tag.is_some() {
                return Err(format!("line {line}: anchors and tags are not supported"));
            }
            let null = style == ScalarStyle::Plain && matches!(&*v, "" | "~" | "null" | "Null" | "NULL");
            Ok(if null { Node::Null } else { Node::Text(v.into_owned()) })
        }
        Event::MappingStart(anchor, _) => {
            if anchor != 0 {
                return Err(format!("line {line}: anchors are not supported"));
            }
            let mut entries: Vec<(String, Node)> = Vec::new();
            loop {
                let (key, kline) = events
                    .next()
                    .ok_or("the document ends inside a mapping")?
                    .map_err(|e| e.to_string())?;
                let key = match key {
                    Event::MappingEnd => return Ok(Node::Map(entries)),
                    Event::Scalar(k, ..) => k.into_owned(),
                    other => return Err(format!("line {kline}: a key must be text, not {other:?}")),
                };
                if entries.iter().any(|(k, _)| *k == key) {
                    return Err(format!("line {kline}: {key} given twice"));
                }
                let value = node(events, None)?;
                entries.push((key, value));
            }
        }
        Event::SequenceStart(..) => {
            let mut depth = 1;
            while depth > 0 {
                match events
                    .next()
                    .ok_or("the document ends inside a list")?
                    .map_err(|e| e.to_string())?
                    .0
                {
                    Event::SequenceStart(..) | Event::MappingStart(..) => depth += 1,
                    Event::SequenceEnd | Event::MappingEnd => depth -= 1,
                    _ => {}
                }
            }
            Ok(Node::List)
        }
        Event::Alias(_) => Err(format!("line {line}: aliases are not supported")),
        other => Err(format!("line {line}: unexpected {other:?}")),
    }
}

/// A mapping's entries (a null node is an empty mapping), or what it is instead.
fn entries<'n>(n: &'n Node, key: &str) -> Result<&'n [(String, Node)], String> {
    match n {
        Node::Null => Ok(&[]),
        Node::Map(m) => Ok(m),
        _ => Err(format!("{key}: expected a mapping")),
    }
}

fn text<'n>(n: &'n Node, key: &str) -> Result<Option<&'n str>, String> {
    match n {
        Node::Null => Ok(None),
        Node::Text(t) => Ok(Some(t)),
        _ => Err(format!("{key}: expected text")),
    }
}

/// The web config's meaning, before any file it names is read.
#[derive(Debug, Default, PartialEq)]
struct Parsed {
    cert_key: Option<(String, String)>,
    users: BTreeMap<String, String>,
}

fn interpret(root: &Node) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    for (key, value) in entries(root, "the file")? {
        match key.as_str() {
            "tls_server_config" => {
                let (mut cert, mut key_file) = (None, None);
                for (k, v) in entries(value, key)? {
                    let name = format!("tls_server_config.{k}");
                    match k.as_str() {
                        "cert_file" => cert = text(v, &name)?,
                        "key_file" => key_file = text(v, &name)?,
                        k if UNSUPPORTED_TLS.contains(&k) => {
                            return Err(format!(
                                "{name}: not supported by pcieperf (cert_file and key_file are)"
                            ))
                        }
                        _ => return Err(format!("{name}: unknown key (expected cert_file, key_file)")),
                    }
                }
                if value != &Node::Null {
                    match (cert, key_file) {
                        (Some(c), Some(k)) => out.cert_key = Some((c.to_string(), k.to_string())),
                        (None, _) => return Err("tls_server_config: missing cert_file".into()),
                        (_, None) => return Err("tls_server_config: missing key_file".into()),
                    }
                }
            }
            "basic_auth_users" => {
                for (user, hash) in entries(value, key)? {
                    let name = format!("basic_auth_users.{user}");
                    let hash = text(hash, &name)?.ok_or_else(|| format!("{name}: no password hash"))?;
                    let parts = hash
                        .parse::<bcrypt::HashParts>()
                        .map_err(|e| format!("{name}: not a bcrypt hash ($2y$10$...): {e}"))?;
                    // Any other cost fails every check (and would set an unknown user's).
                    if !(4..=31).contains(&parts.get_cost()) {
                        return Err(format!("{name}: cost {} (bcrypt allows 4 to 31)", parts.get_cost()));
                    }
                    out.users.insert(user.clone(), hash.to_string());
                }
            }
            "http_server_config" => {
                if let Some((k, _)) = entries(value, key)?.first() {
                    return Err(format!("http_server_config.{k}: not supported by pcieperf"));
                }
            }
            _ => {
                return Err(format!(
                    "{key}: unknown key (expected tls_server_config, basic_auth_users, http_server_config)"
                ))
            }
        }
    }
    Ok(out)
}

/// Read `path`: the YAML, then the certificate chain and key it names (relative to the file's
/// directory, as the exporter-toolkit reads them). Every error names the file.
pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
    let (config, versions) = reload(path);
    config.map(|c| WebConfig {
        file: Some((path.to_path_buf(), versions)),
        ..c
    })
}

/// [`load`]'s config (without its versions), and the versions of the files read whether or not
/// they made a good config: a broken file is watched too, to be read again once fixed.
pub(crate) fn reload(path: &Path) -> (Result<WebConfig, WebConfigError>, Versions) {
    let mut reading = Reading::new();
    let config = read(path, &mut reading);
    (config, reading.done())
}

fn read(path: &Path, reading: &mut Reading) -> Result<WebConfig, WebConfigError> {
    let raw = read_small(reading, path).map_err(WebConfigError)?;
    let text = String::from_utf8(raw).map_err(|_| bad(path, "not UTF-8 text"))?;
    let parsed = parse_yaml(&text)
        .and_then(|n| interpret(&n))
        .map_err(|e| bad(path, e))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let near = |f: &str| -> PathBuf { dir.join(f) };
    let tls = match &parsed.cert_key {
        None => None,
        Some((cert, key)) => {
            let (cert, key) = (near(cert), near(key));
            let cert_pem = read_small(reading, &cert).map_err(|e| bad(path, e))?;
            let key_pem = read_small(reading, &key).map_err(|e| bad(path, e))?;
            let chain = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(path, format!("cert_file {}: {e}", cert.display())))?;
            if chain.is_empty() {
                return Err(bad(path, format!("cert_file {}: no PEM certificate", cert.display())));
            }
            let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|e| bad(path, format!("key_file {}: no PEM private key ({e})", key.display())))?;
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key_der))
                .map_err(|e| bad(path, format!("{} and {}: {e}", cert.display(), key.display())))?;
            Some(Arc::new(config))
        }
    };
    Ok(WebConfig {
        tls,
        users: parsed.users,
        file: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bcrypt hash at the lowest cost (quick to make).
    fn hash() -> String {
        bcrypt::hash("secret", 4).unwrap()
    }

    fn parse(text: &str) -> Result<Parsed, String> {
        parse_yaml(text).and_then(|n| interpret(&n))
    }

    #[test]
    fn the_exporter_toolkit_format_in_block_and_flow_styles() {
        let h = hash();
        let block = format!(
            "# TLS and users\ntls_server_config:\n  cert_file: server.crt\n  key_file: 'server.key'\nbasic_auth_users:\n  prometheus: {h}\n  \"other\": '{h}'\n"
        );
        let p = parse(&block).unwrap();
        assert_eq!(p.cert_key, Some(("server.crt".into(), "server.key".into())));
        assert_eq!(p.users.len(), 2);
        assert_eq!(p.users["prometheus"], h);
        let flow =
            format!("{{tls_server_config: {{cert_file: a.pem, key_file: b.pem}}, basic_auth_users: {{p: '{h}'}}}}");
        let q = parse(&flow).unwrap();
        assert_eq!(q.cert_key, Some(("a.pem".into(), "b.pem".into())));
        assert_eq!(q.users["p"], h);
        // An empty file, or empty sections, ask for nothing.
        assert_eq!(parse("").unwrap(), Parsed::default());
        assert_eq!(
            parse("basic_auth_users:\ntls_server_config: ~\n").unwrap(),
            Parsed::default()
        );
    }

    #[test]
    fn the_example_in_the_docs_reads() {
        let doc = include_str!("../../../docs/pmu.md");
        let at = doc.find("```yaml\ntls_server_config:").expect("the example");
        let block = &doc[at + 8..];
        let p = parse(&block[..block.find("```").unwrap()]).unwrap();
        assert_eq!(p.cert_key, Some(("server.crt".into(), "server.key".into())));
        assert!(p.users["prometheus"].starts_with("$2b$10$"));
    }

    #[test]
    fn what_it_cannot_honour_is_refused_by_name() {
        let e = parse("tls_server_config:\n  cert_file: a\n").unwrap_err();
        assert!(e.contains("missing key_file"), "{e}");
        let e = parse(
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
        )
        .unwrap_err();
        assert!(e.contains("tls_server_config.client_auth_type: not supported"), "{e}");
        let e = parse("tls_server_config:\n  cert_fil: a\n").unwrap_err();
        assert!(e.contains("tls_server_config.cert_fil: unknown key"), "{e}");
        let e = parse("basic_auth_users:\n  alice: secret\n").unwrap_err();
        assert!(e.contains("basic_auth_users.alice: not a bcrypt hash"), "{e}");
        let e = parse(&format!(
            "basic_auth_users:\n  alice: '{}'\n",
            hash().replace("$04$", "$99$")
        ))
        .unwrap_err();
        assert!(
            e.contains("basic_auth_users.alice: cost 99 (bcrypt allows 4 to 31)"),
            "{e}"
        );
        let e = parse("basic_auth_user:\n  alice: x\n").unwrap_err();
        assert!(e.contains("basic_auth_user: unknown key"), "{e}");
        let e = parse("http_server_config:\n  http2: false\n").unwrap_err();
        assert!(e.contains("http_server_config.http2: not supported"), "{e}");
        let e = parse("basic_auth_users:\n  a: x\n  a: y\n").unwrap_err();
        assert!(e.contains("a given twice"), "{e}");
        assert!(parse("tls_server_config: [a, b]\n")
            .unwrap_err()
            .contains("expected a mapping"));
        assert!(parse("a: [\n").is_err(), "broken YAML");
        assert!(parse("a: &x 1\nb: *x\n").is_err(), "aliases");
    }
}

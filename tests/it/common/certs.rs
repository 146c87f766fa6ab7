//! Test certificates made with the `openssl` command (CI installs it; a
//! test that needs one fails, rather than skips, without it): a CA of its
//! own, and leaf certificates it signs for `localhost` and 127.0.0.1.

use std::path::{Path, PathBuf};

/// The leaf's key type.
#[derive(Debug, Clone, Copy)]
pub enum KeyKind {
    Rsa,
    EcP256,
}

impl KeyKind {
    fn newkey(self) -> &'static [&'static str] {
        match self {
            KeyKind::Rsa => &["-newkey", "rsa:2048"],
            KeyKind::EcP256 => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
        }
    }
}

/// A CA: `ca.pem` and `ca.key` in its directory.
pub struct Ca {
    pub dir: PathBuf,
    pub pem: PathBuf,
}

/// A certificate and its key.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Run `openssl args` in `dir`; panics with its stderr if it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl must be installed (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Ca {
    /// A new CA (RSA 2048, two days) in `dir`.
    pub fn new(dir: &Path) -> Ca {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-subj",
                "/CN=augur test CA",
                "-days",
                "2",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        Ca {
            dir: dir.to_path_buf(),
            pem: dir.join("ca.pem"),
        }
    }

    /// A certificate for `localhost` and 127.0.0.1 with common name `cn`,
    /// signed by this CA: `<name>.pem` and `<name>.key` in the CA's
    /// directory. Each has a serial of its own.
    pub fn leaf(&self, name: &str, cn: &str, kind: KeyKind) -> Leaf {
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let subj = format!("/CN={cn}");
        let mut args = vec!["req"];
        args.extend_from_slice(kind.newkey());
        args.extend_from_slice(&["-nodes", "-keyout", &key, "-out", &csr, "-subj", &subj]);
        openssl(&self.dir, &args);
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.join(&ext),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n\
             basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth\n\
             subjectKeyIdentifier=hash\n\
             authorityKeyIdentifier=keyid,issuer\n",
        )
        .unwrap();
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
        Leaf {
            cert: self.dir.join(pem),
            key: self.dir.join(key),
        }
    }
}

//! The subject of a client certificate the TLS layer already verified: its common name (the
//! user) and organizations (the groups), as kube-apiserver's x509 authenticator reads them. A
//! small DER walk: the certificate's `tbsCertificate` fields up to `subject`.
use super::PeerCertificate;

/// One DER element at the start of `der`: (tag, contents, rest).
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// The subject's CN and Os; `None` for bytes that are not a certificate.
pub fn subject(der: &[u8]) -> Option<PeerCertificate> {
    let (_, cert, _) = element(der)?;
    let (_, tbs, _) = element(cert)?;
    let mut rest = tbs;
    // version [0] (optional), serial, signature algorithm, issuer, validity, subject.
    let (tag, _, r) = element(rest)?;
    if tag == 0xa0 {
        rest = r;
    }
    for _ in 0..4 {
        rest = element(rest)?.2;
    }
    let (_, mut name, _) = element(rest)?;
    let mut out = PeerCertificate {
        common_name: String::new(),
        organizations: Vec::new(),
    };
    while !name.is_empty() {
        let (_, set, r) = element(name)?;
        name = r;
        let mut set = set;
        while !set.is_empty() {
            let (_, atv, r) = element(set)?;
            set = r;
            let (_, oid, r) = element(atv)?;
            let (_, value, _) = element(r)?;
            let value = String::from_utf8_lossy(value).into_owned();
            if oid == OID_CN {
                out.common_name = value;
            } else if oid == OID_O {
                out.organizations.push(value);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_cn_and_o_and_refuses_garbage() {
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        p.distinguished_name
            .push(rcgen::DnType::OrganizationName, "dev");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = p.self_signed(&key).unwrap();
        let s = super::subject(cert.der()).unwrap();
        assert_eq!(
            (s.common_name.as_str(), s.organizations),
            ("alice", vec!["dev".to_string()])
        );
        assert!(super::subject(&[0x30, 0x05, 1]).is_none());
        assert!(super::subject(&[]).is_none());
    }
}

//! A kubeconfig pointing at the server.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Renders a kubeconfig with one cluster/context/user named `kube-fake-apiserver`.
pub fn render(url: &str, ca_pem: Option<&str>) -> String {
    let ca = ca_pem
        .map(|pem| format!("\n    certificate-authority-data: {}", STANDARD.encode(pem)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kube-fake-apiserver
  cluster:
    server: {url}{ca}
contexts:
- name: kube-fake-apiserver
  context:
    cluster: kube-fake-apiserver
    user: kube-fake-apiserver
    namespace: default
current-context: kube-fake-apiserver
users:
- name: kube-fake-apiserver
  user:
    token: kube-fake-apiserver
preferences: {{}}
"
    )
}

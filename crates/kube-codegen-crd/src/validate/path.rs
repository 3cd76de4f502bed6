//! Field paths rendered the way apimachinery's `field.Path.String()` renders them:
//! `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`.

use std::fmt;

/// A field path. Children are joined with `.`, indexes and map keys are bracketed (keys unquoted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A root path (may itself contain dots, as `field.NewPath("metadata")`).
    pub(crate) fn new(name: &str) -> Path {
        Path(name.to_string())
    }

    /// `self.name`; `name` may contain dots (`openAPIV3Schema.type`), as the server's child names do.
    pub(crate) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            return Path(name.to_string());
        }
        let mut s = String::with_capacity(self.0.len() + 1 + name.len());
        s.push_str(&self.0);
        s.push('.');
        s.push_str(name);
        Path(s)
    }

    /// `self[key]`, a map key (unquoted, as the server prints it).
    pub(crate) fn key(&self, key: &str) -> Path {
        let mut s = String::with_capacity(self.0.len() + 2 + key.len());
        s.push_str(&self.0);
        s.push('[');
        s.push_str(key);
        s.push(']');
        Path(s)
    }

    /// `self[i]`.
    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{}]", self.0, i))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Path;

    #[test]
    fn renders_like_field_path() {
        let p = Path::new("spec")
            .child("versions")
            .index(1)
            .child("schema")
            .child("openAPIV3Schema")
            .child("properties")
            .key("spec")
            .child("type");
        assert_eq!(
            p.as_str(),
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type"
        );
        assert_eq!(
            Path::new("spec").child("scale.specReplicasPath").as_str(),
            "spec.scale.specReplicasPath"
        );
    }
}

//! `/openapi/v3` and `/openapi/v2` documents built from the registered resources' schemas.
//! (STUB: signatures fixed, bodies being written.)
use serde_json::Value;

/// What the OpenAPI builders need to know about one served resource version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSchema {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The version's openAPIV3Schema; `None` for kinds registered without one (stored as free-form objects).
    pub schema: Option<Value>,
}

/// `GET /openapi/v3`: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, "apis/<g>/<v>": ...}}`.
pub fn v3_index(_resources: &[ResourceSchema]) -> Value {
    serde_json::json!({"paths": {}})
}

/// `GET /openapi/v3/apis/<group>/<version>` (or `api/v1` for the core group, `group == ""`).
/// Returns `None` when no resource is served in that group/version.
pub fn v3_group_version(_group: &str, _version: &str, _resources: &[ResourceSchema]) -> Option<Value> {
    None
}

/// `GET /openapi/v2`: one swagger 2.0 document for everything.
pub fn v2(_resources: &[ResourceSchema]) -> Value {
    serde_json::json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.35.0"}, "paths": {}, "definitions": {}})
}

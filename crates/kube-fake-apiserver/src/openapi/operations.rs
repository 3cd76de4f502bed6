//! The `paths` of a resource: one table row per operation, turned into OpenAPI v2 or v3 by one
//! function, so every verb is described the same way and a new one is a new row.
use serde_json::{Map, Value, json};

use super::{DELETE_OPTIONS, Format, PATCH, ResourceSchema, STATUS};

/// Which URL of the resource an operation is served on.
#[derive(Clone, Copy, PartialEq)]
enum Url {
    /// `.../namespaces/{namespace}/<plural>` (or `.../<plural>` when cluster scoped).
    Collection,
    /// The collection URL plus `/{name}`.
    Item,
    /// `.../<plural>` across namespaces; only namespaced resources have it.
    AllNamespaces,
}

/// The request body an operation takes.
#[derive(Clone, Copy)]
enum Body {
    None,
    Object,
    DeleteOptions,
    Patch,
}

/// The schema of the 200 response.
#[derive(Clone, Copy)]
enum Response {
    Object,
    List,
    Status,
}

/// One operation: the URL it is served on, the lower-case HTTP method (its key under the path),
/// the `operationId` prefix (followed by [`op_suffix`]), `x-kubernetes-action`, the description
/// (followed by a space and the kind), the query parameters (named in [`QUERY_PARAMS`]), the
/// request body and the response.
#[derive(Clone, Copy)]
struct Operation(
    Url,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Body,
    Response,
);

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];

/// Every operation of a resource, in the order the documents list them.
#[rustfmt::skip] // one row per operation reads better than rustfmt's one field per line
const OPERATIONS: &[Operation] = &[
    //        URL                 method    operationId         action              description
    Operation(Url::Collection,    "get",    "list",             "list",             "list or watch objects of kind",
              LIST_PARAMS, Body::None, Response::List),
    Operation(Url::Collection,    "post",   "create",           "post",             "create a",
              WRITE_PARAMS, Body::Object, Response::Object),
    Operation(Url::Collection,    "delete", "deletecollection", "deletecollection", "delete collection of",
              LIST_PARAMS, Body::DeleteOptions, Response::Status),
    Operation(Url::Item,          "get",    "read",             "get",              "read the specified",
              &["resourceVersion"], Body::None, Response::Object),
    Operation(Url::Item,          "put",    "replace",          "put",              "replace the specified",
              WRITE_PARAMS, Body::Object, Response::Object),
    Operation(Url::Item,          "patch",  "patch",            "patch",            "partially update the specified",
              &["dryRun", "fieldManager", "fieldValidation", "force"], Body::Patch, Response::Object),
    Operation(Url::Item,          "delete", "delete",           "delete",           "delete a",
              &["dryRun"], Body::DeleteOptions, Response::Status),
    Operation(Url::AllNamespaces, "get",    "list",             "list",             "list or watch objects of kind",
              LIST_PARAMS, Body::None, Response::List),
];

/// Query parameters: name, description, type.
#[rustfmt::skip] // one row per parameter
const QUERY_PARAMS: &[(&str, &str, &str)] = &[
    ("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".", "boolean"),
    ("continue", "The continue option should be set when retrieving more results from the server.", "string"),
    ("fieldSelector", "A selector to restrict the list of returned objects by their fields.", "string"),
    ("labelSelector", "A selector to restrict the list of returned objects by their labels.", "string"),
    ("limit", "limit is a maximum number of responses to return for a list call.", "integer"),
    ("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from.", "string"),
    ("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls.", "string"),
    ("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`.", "boolean"),
    ("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    ("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.", "boolean"),
    ("dryRun", DRY_RUN_DOC, "string"),
    ("fieldManager", FIELD_MANAGER_DOC, "string"),
    ("fieldValidation", FIELD_VALIDATION_DOC, "string"),
    ("force", "Force is going to \"force\" Apply requests.", "boolean"),
];

const DRY_RUN_DOC: &str = "When present, indicates that modifications should not be persisted. An invalid or \
unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values \
are: - All: all dry run stages will be processed";
const FIELD_MANAGER_DOC: &str =
    "fieldManager is a name associated with the actor or entity that is making these changes.";
const FIELD_VALIDATION_DOC: &str = "fieldValidation instructs the server on how to handle objects in the request \
(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown \
fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder \
encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is \
dropped from the object, and for each duplicate field that is encountered. - Strict: This will fail the request with a \
BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present.";

/// A parameter in `location` (`query` or `path`); path parameters are required.
fn param(f: Format, location: &str, name: &str, description: &str, type_: &str) -> Value {
    let mut p = json!({"name": name, "in": location, "description": description});
    if location == "path" {
        p["required"] = json!(true);
    }
    match f {
        Format::V3 => p["schema"] = json!({"type": type_, "uniqueItems": true}),
        Format::V2 => {
            p["type"] = json!(type_);
            p["uniqueItems"] = json!(true);
        }
    }
    p
}

fn query_params(f: Format, names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .filter_map(|n| QUERY_PARAMS.iter().find(|(name, _, _)| name == n))
        .map(|(name, doc, type_)| param(f, "query", name, doc, type_))
        .collect()
}

/// The operationId suffix the real server uses, e.g. `StableExampleComV1NamespacedCronTab`.
fn op_suffix(r: &ResourceSchema, namespaced: bool) -> String {
    let camel = |s: &str| -> String {
        s.split(['.', '-'])
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut c = p.chars();
                c.next()
                    .map(|h| h.to_uppercase().chain(c).collect::<String>())
                    .unwrap_or_default()
            })
            .collect()
    };
    let group = if r.group.is_empty() {
        "Core".to_string()
    } else {
        camel(&r.group)
    };
    let scope = if namespaced { "Namespaced" } else { "" };
    format!("{group}{}{scope}{}", camel(&r.version), r.kind)
}

/// Names and content types an operation refers to, fixed per resource.
struct Refs<'a> {
    name: &'a str,
    list_name: &'a str,
    patch_types: Vec<&'static str>,
}

fn operation(r: &ResourceSchema, f: Format, op: Operation, refs: &Refs<'_>) -> Value {
    let Operation(url, _, verb, action, description, params, body, response) = op;
    let json_types = vec!["application/json", "application/yaml"];
    let body = match body {
        Body::None => None,
        Body::Object => Some((refs.name, json_types)),
        Body::DeleteOptions => Some((DELETE_OPTIONS, json_types)),
        Body::Patch => Some((PATCH, refs.patch_types.clone())),
    };
    let response = match response {
        Response::Object => refs.name,
        Response::List => refs.list_name,
        Response::Status => STATUS,
    };
    let namespaced = r.namespaced && url != Url::AllNamespaces;
    let response_schema = f.reference(response);
    let mut o = json!({
        "description": format!("{description} {}", r.kind),
        "operationId": format!("{verb}{}", op_suffix(r, namespaced)),
        "tags": [if r.group.is_empty() { format!("core_{}", r.version) } else { format!("{}_{}", r.group.replace('.', ""), r.version) }],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "kind": r.kind, "version": r.version},
    });
    let mut params = query_params(f, params);
    match f {
        Format::V3 => {
            if let Some((schema, types)) = &body {
                let content: Map<String, Value> = types
                    .iter()
                    .map(|t| (t.to_string(), json!({"schema": f.reference(schema)})))
                    .collect();
                o["requestBody"] = json!({"content": content, "required": true});
            }
            o["responses"] = json!({
                "200": {"description": "OK", "content": {"application/json": {"schema": response_schema.clone()}, "application/yaml": {"schema": response_schema}}},
                "401": {"description": "Unauthorized"},
            });
        }
        Format::V2 => {
            if let Some((schema, types)) = &body {
                params.push(json!({"name": "body", "in": "body", "required": true, "schema": f.reference(schema)}));
                o["consumes"] = json!(types);
            }
            o["produces"] = json!(["application/json", "application/yaml"]);
            o["schemes"] = json!(["https"]);
            o["responses"] = json!({"200": {"description": "OK", "schema": response_schema}, "401": {"description": "Unauthorized"}});
        }
    }
    o["parameters"] = Value::Array(params);
    o
}

/// Adds the collection, item and (for namespaced resources) all-namespaces paths of `r`.
pub(super) fn resource_paths(
    r: &ResourceSchema,
    name: &str,
    list_name: &str,
    f: Format,
    paths: &mut Map<String, Value>,
) {
    let root = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    let collection = if r.namespaced {
        format!("{root}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{root}/{}", r.plural)
    };
    let mut scope_params = Vec::new();
    if r.namespaced {
        scope_params.push(param(
            f,
            "path",
            "namespace",
            "object name and auth scope, such as for teams and projects",
            "string",
        ));
    }
    let mut item_params = vec![param(
        f,
        "path",
        "name",
        &format!("name of the {}", r.kind),
        "string",
    )];
    item_params.extend(scope_params.iter().cloned());
    let mut patch_types = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if r.schema.is_none() {
        // Built-in kinds also take strategic merge patches (custom resources answer 415).
        patch_types.push("application/strategic-merge-patch+json");
    }
    let refs = Refs {
        name,
        list_name,
        patch_types,
    };
    // The path-level `parameters` (none on the all-namespaces path, as on the real server).
    let mut urls = vec![
        (Url::Collection, collection.clone(), Some(scope_params)),
        (
            Url::Item,
            format!("{collection}/{{name}}"),
            Some(item_params),
        ),
    ];
    if r.namespaced {
        urls.push((Url::AllNamespaces, format!("{root}/{}", r.plural), None));
    }
    for (url, path, path_params) in urls {
        let mut ops: Map<String, Value> = OPERATIONS
            .iter()
            .filter(|op| op.0 == url)
            .map(|&op| (op.1.to_string(), operation(r, f, op, &refs)))
            .collect();
        if let Some(p) = path_params {
            ops.insert("parameters".into(), Value::Array(p));
        }
        paths.insert(path, Value::Object(ops));
    }
}

//! The `meta.k8s.io/v1` schemas every document refers to (ObjectMeta, ListMeta, Status, ...),
//! trimmed to the fields and descriptions clients and `kubectl explain` use.
use serde_json::{Map, Value, json};

use super::{
    API_VERSION_DOC, DELETE_OPTIONS, Format, KIND_DOC, LIST_META, LIST_METADATA_DOC,
    MANAGED_FIELDS, OBJECT_META, OWNER_REFERENCE, PATCH, STATUS, gvk_list,
};

pub(super) fn meta_schemas(f: Format) -> Map<String, Value> {
    let string = |d: &str| json!({"description": d, "type": "string"});
    let string_map = |d: &str| json!({"description": d, "type": "object", "additionalProperties": {"type": "string", "default": ""}});
    let time = |d: &str| json!({"description": d, "type": "string", "format": "date-time"});
    let object_meta = json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "annotations": string_map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata."),
            "creationTimestamp": time("CreationTimestamp is a timestamp representing the server time when this object was created."),
            "deletionGracePeriodSeconds": {"description": "Number of seconds allowed for this object to gracefully terminate before it will be removed from the system.", "type": "integer", "format": "int64"},
            "deletionTimestamp": time("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
            "finalizers": {"description": "Must be empty before the object is deleted from the registry.", "type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "generateName": string("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
            "generation": {"description": "A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.", "type": "integer", "format": "int64"},
            "labels": string_map("Map of string keys and values that can be used to organize and categorize (scope and select) objects."),
            "managedFields": {"description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.", "type": "array", "items": f.reference(MANAGED_FIELDS)},
            "name": string("Name must be unique within a namespace. Is required when creating resources. Cannot be updated."),
            "namespace": string("Namespace defines the space within which each name must be unique. Cannot be updated."),
            "ownerReferences": {"description": "List of objects depended by this object.", "type": "array", "items": f.reference(OWNER_REFERENCE), "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"},
            "resourceVersion": string("An opaque value that represents the internal version of this object. Populated by the system. Read-only."),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
            "uid": string("UID is the unique in time and space value for this object. Populated by the system. Read-only."),
        },
    });
    let owner_reference = json!({
        "description": "OwnerReference contains enough information to let you identify an owning object.",
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": string("API version of the referent."),
            "blockOwnerDeletion": {"description": "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.", "type": "boolean"},
            "controller": {"description": "If true, this reference points to the managing controller.", "type": "boolean"},
            "kind": string("Kind of the referent."),
            "name": string("Name of the referent."),
            "uid": string("UID of the referent."),
        },
    });
    let managed_fields = json!({
        "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
        "type": "object",
        "properties": {
            "apiVersion": string("APIVersion defines the version of this resource that this field set applies to."),
            "fieldsType": string("FieldsType is the discriminator for the different fields format and version."),
            "fieldsV1": {"description": "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type.", "type": "object"},
            "manager": string("Manager is an identifier of the workflow managing these fields."),
            "operation": string("Operation is the type of operation which lead to this ManagedFieldsEntry being created."),
            "subresource": string("Subresource is the name of the subresource used to update that object."),
            "time": time("Time is the timestamp of when the ManagedFields entry was added."),
        },
    });
    let list_meta = json!({
        "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.",
        "type": "object",
        "properties": {
            "continue": string("continue may be set if the user set a limit on the number of items returned."),
            "remainingItemCount": {"description": "remainingItemCount is the number of subsequent items in the list which are not included in this list response.", "type": "integer", "format": "int64"},
            "resourceVersion": string("String that identifies the server's internal version of this object."),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
        },
    });
    let status = json!({
        "description": "Status is a return value for calls that don't return other objects.",
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "code": {"description": "Suggested HTTP return code for this status, 0 if not set.", "type": "integer", "format": "int32"},
            "details": {"description": "Extended data associated with the reason.", "type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "kind": {"description": KIND_DOC, "type": "string"},
            "message": string("A human-readable description of the status of this operation."),
            "metadata": f.described_ref(LIST_META, LIST_METADATA_DOC),
            "reason": string("A machine-readable description of why this operation is in the \"Failure\" status."),
            "status": string("Status of the operation. One of: \"Success\" or \"Failure\"."),
        },
        "x-kubernetes-group-version-kind": gvk_list("", "v1", "Status"),
    });
    let delete_options = json!({
        "description": "DeleteOptions may be provided when deleting an API object.",
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "dryRun": {"description": "When present, indicates that modifications should not be persisted.", "type": "array", "items": {"type": "string", "default": ""}},
            "gracePeriodSeconds": {"description": "The duration in seconds before the object should be deleted.", "type": "integer", "format": "int64"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "propagationPolicy": string("Whether and how garbage collection will be performed."),
        },
    });
    let patch = json!({
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        "type": "object",
    });
    let mut m = Map::new();
    m.insert(OBJECT_META.into(), object_meta);
    m.insert(OWNER_REFERENCE.into(), owner_reference);
    m.insert(MANAGED_FIELDS.into(), managed_fields);
    m.insert(LIST_META.into(), list_meta);
    m.insert(STATUS.into(), status);
    m.insert(DELETE_OPTIONS.into(), delete_options);
    m.insert(PATCH.into(), patch);
    m
}

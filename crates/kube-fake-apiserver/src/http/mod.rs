//! HTTP: transport types ([`transport`]), path routing ([`router`]), the listener ([`serve`])
//! and a request's audit events ([`audit`]).
//! What a request does is decided in [`crate::dispatch`].
pub mod audit;
pub mod router;
pub mod serve;
pub mod transport;

pub use transport::{
    Body, Output, Req, error_response, full, json_response, negotiate, protobuf_response,
};

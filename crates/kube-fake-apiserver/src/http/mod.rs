//! HTTP: transport types ([`transport`]), path routing ([`router`]) and the listener ([`serve`]).
//! What a request does is decided in [`crate::dispatch`].
pub mod router;
pub mod serve;
pub mod transport;

pub use transport::{
    Body, Output, Req, error_response, full, json_response, negotiate, protobuf_response,
};

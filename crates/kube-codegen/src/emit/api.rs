//! The generated API over the runtime: typed clients (client-gen), listers (lister-gen) and
//! informers (informer-gen). Thin by design: every verb, cache and informer is a generic in
//! `kube-codegen-runtime`, and what is generated per kind is names and accessors, so hundreds
//! of kinds stay cheap to compile.
//!
//! Where each piece goes: a kind's module gets its subresource markers, lister and informer;
//! a version module its group-version client and informers; a group module its informers;
//! the root module the `Clientset` and the `InformerFactoryExt` trait.

use proc_macro2::TokenStream;
use quote::quote;

use super::{allow_deprecated, ident};
use crate::model::{GroupMod, Model, Resource, VersionMod};
use crate::options::Emit;

/// A kind's items: subresource markers (client), lister, informer.
pub fn kind_items(r: &Resource, emit: Emit) -> TokenStream {
    let root = ident(&r.root);
    let allow = allow_deprecated(r);
    let mut out = TokenStream::new();
    if emit.client {
        if r.status_subresource {
            out.extend(quote! {
                #allow
                impl ::kube_codegen_runtime::HasStatus for #root {}
            });
        }
        if r.scale.is_some() {
            out.extend(quote! {
                #allow
                impl ::kube_codegen_runtime::HasScale for #root {}
            });
        }
    }
    let lister = ident(&r.api.lister);
    if emit.any_listers() {
        let arc = quote!(::std::sync::Arc<#root>);
        let not_synced = quote!(::kube_codegen_runtime::cache::NotSynced);
        let scoped = if r.namespaced {
            let ns_lister = ident(&r.api.namespace_lister);
            let accessor = ident(&r.api.accessor);
            let doc = format!(" The `{}` of one namespace.", r.plural);
            quote! {
                #[doc = #doc]
                pub fn #accessor(&self, namespace: &str) -> #ns_lister {
                    self.0.namespace(namespace)
                }
            }
        } else {
            let doc = format!(
                " The `{}` named `name`: `Ok(None)` when the cache has no such object.",
                r.kind
            );
            quote! {
                #[doc = #doc]
                pub fn get(&self, name: &str) -> Result<Option<#arc>, #not_synced> {
                    self.0.get(name)
                }
            }
        };
        let doc = format!(
            " Reads `{}` objects from an informer's cache (lister-gen's `{}Lister`). Reads fail with `NotSynced` until the cache holds its first list, so a missing object is never confused with a cache still filling up.",
            r.kind, r.kind
        );
        let list_doc = if r.namespaced {
            " Objects of every namespace whose labels match `selector`."
        } else {
            " Objects whose labels match `selector`."
        };
        out.extend(quote! {
            #[doc = #doc]
            #allow
            #[derive(Clone, Debug)]
            pub struct #lister(::kube_codegen_runtime::cache::Lister<#root>);

            #allow
            impl #lister {
                /// A lister over a runtime lister (an informer's, usually).
                pub fn new(lister: ::kube_codegen_runtime::cache::Lister<#root>) -> Self {
                    Self(lister)
                }
                #[doc = #list_doc]
                pub fn list(
                    &self,
                    selector: &::kube::core::Selector,
                ) -> Result<Vec<#arc>, #not_synced> {
                    self.0.list(selector)
                }
                #scoped
                /// True once the cache holds its first list.
                pub fn has_synced(&self) -> bool {
                    self.0.has_synced()
                }
            }
        });
        if r.namespaced {
            let ns_lister = ident(&r.api.namespace_lister);
            let doc = format!(
                " Reads the `{}` objects of one namespace from an informer's cache.",
                r.kind
            );
            out.extend(quote! {
                #[doc = #doc]
                #allow
                pub type #ns_lister = ::kube_codegen_runtime::cache::NamespaceLister<#root>;
            });
        }
    }
    if emit.informers {
        let informer = ident(&r.api.informer);
        let doc = format!(
            " The shared informer of `{}` (informer-gen's `{}Informer`): one per factory, its cache read through [`{}`].",
            r.kind, r.kind, r.api.lister
        );
        out.extend(quote! {
            #[doc = #doc]
            #allow
            #[derive(Clone, Debug)]
            pub struct #informer(::kube_codegen_runtime::cache::SharedIndexInformer<#root>);

            #allow
            impl #informer {
                /// Wraps a runtime informer (the factory's, usually).
                pub fn new(informer: ::kube_codegen_runtime::cache::SharedIndexInformer<#root>) -> Self {
                    Self(informer)
                }
                /// The informer: add event handlers, wait for its sync.
                pub fn informer(&self) -> &::kube_codegen_runtime::cache::SharedIndexInformer<#root> {
                    &self.0
                }
                /// A lister over the informer's cache.
                pub fn lister(&self) -> #lister {
                    #lister::new(self.0.lister())
                }
            }
        });
    }
    out
}

/// A version module's group-version client and informers.
pub fn version_items(g: &GroupMod, v: &VersionMod, emit: Emit) -> TokenStream {
    let gv = if g.group.is_empty() {
        v.version.clone()
    } else {
        format!("{}/{}", g.group, v.version)
    };
    let mut out = TokenStream::new();
    if emit.client {
        let client = ident(&v.client);
        let accessors = v.resources.iter().map(|r| {
            let root = ident(&r.root);
            let allow = allow_deprecated(r);
            let acc = ident(&r.api.accessor);
            if r.namespaced {
                let all = ident(&r.api.accessor_all);
                let doc = format!(" `{}` in `namespace`: every verb.", r.plural);
                let all_doc = format!(" `{}` in every namespace: list and watch.", r.plural);
                quote! {
                    #[doc = #doc]
                    #allow
                    pub fn #acc(&self, namespace: &str) -> ::kube_codegen_runtime::ResourceClient<#root> {
                        ::kube_codegen_runtime::ResourceClient::namespaced(self.client.clone(), namespace)
                    }
                    #[doc = #all_doc]
                    #allow
                    pub fn #all(&self) -> ::kube_codegen_runtime::AllNamespacesClient<#root> {
                        ::kube_codegen_runtime::AllNamespacesClient::new(self.client.clone())
                    }
                }
            } else {
                let doc = format!(" `{}` (cluster-scoped): every verb.", r.plural);
                quote! {
                    #[doc = #doc]
                    #allow
                    pub fn #acc(&self) -> ::kube_codegen_runtime::ResourceClient<#root> {
                        ::kube_codegen_runtime::ResourceClient::cluster(self.client.clone())
                    }
                }
            }
        });
        let doc = format!(" Typed clients of `{gv}` (client-gen's group-version client).");
        out.extend(quote! {
            #[doc = #doc]
            #[derive(Clone)]
            pub struct #client {
                client: ::kube::Client,
            }

            impl #client {
                /// The group-version's clients over `client`.
                pub fn new(client: ::kube::Client) -> Self {
                    Self { client }
                }
                #(#accessors)*
            }
        });
    }
    if emit.informers {
        let accessors = v.resources.iter().map(|r| {
            let root = ident(&r.root);
            let allow = allow_deprecated(r);
            let acc = ident(&r.api.accessor);
            let informer = ident(&r.api.informer);
            let doc = format!(" The factory's shared informer of `{}`.", r.plural);
            quote! {
                #[doc = #doc]
                #allow
                pub fn #acc(&self) -> #informer {
                    #informer::new(self.factory.informer_for::<#root>())
                }
            }
        });
        let doc = format!(" Shared informers of `{gv}` kinds from one factory.");
        out.extend(informers_struct(
            &v.informers,
            &doc,
            " The group-version's informers from `factory`.",
            accessors.collect(),
        ));
    }
    out
}

/// A group module's informers (one accessor per version).
pub fn group_items(g: &GroupMod, emit: Emit) -> TokenStream {
    if !emit.informers {
        return TokenStream::new();
    }
    let accessors = g.versions.iter().map(|v| {
        let vm = ident(&v.module);
        let vi = ident(&v.informers);
        let doc = format!(" Informers of `{}`.", v.version);
        quote! {
            #[doc = #doc]
            pub fn #vm(&self) -> self::#vm::#vi {
                self::#vm::#vi::new(&self.factory)
            }
        }
    });
    let doc = format!(" Shared informers of the `{}` group.", g.group);
    informers_struct(
        &g.informers,
        &doc,
        " The group's informers from `factory`.",
        accessors.collect(),
    )
}

/// A handle on the runtime's factory with one accessor per version or kind.
fn informers_struct(
    name: &str,
    doc: &str,
    new_doc: &str,
    accessors: Vec<TokenStream>,
) -> TokenStream {
    let name = ident(name);
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug)]
        pub struct #name {
            factory: ::kube_codegen_runtime::SharedInformerFactory,
        }

        impl #name {
            #[doc = #new_doc]
            pub fn new(factory: &::kube_codegen_runtime::SharedInformerFactory) -> Self {
                Self { factory: factory.clone() }
            }
            #(#accessors)*
        }
    }
}

/// The root module's `Clientset` and `InformerFactoryExt`.
pub fn root_items(model: &Model, emit: Emit) -> TokenStream {
    let mut out = TokenStream::new();
    if emit.client {
        let accessors = model.groups.iter().flat_map(|g| {
            let gm = ident(&g.module);
            g.versions.iter().map(move |v| {
                let vm = ident(&v.module);
                let client = ident(&v.client);
                let acc = ident(&v.clientset_accessor);
                let doc = if g.group.is_empty() {
                    format!(" Typed clients of `{}`.", v.version)
                } else {
                    format!(" Typed clients of `{}/{}`.", g.group, v.version)
                };
                quote! {
                    #[doc = #doc]
                    pub fn #acc(&self) -> self::#gm::#vm::#client {
                        self::#gm::#vm::#client::new(self.client.clone())
                    }
                }
            })
        });
        out.extend(quote! {
            /// The typed clientset (client-gen's `Clientset`): one accessor per group-version,
            /// each handing out a typed client per kind. Cheap to clone (it is a `kube::Client`).
            #[derive(Clone)]
            pub struct Clientset {
                client: ::kube::Client,
            }

            impl Clientset {
                /// A clientset over `client` (from `kube::Client::try_default()`, a kubeconfig, ...).
                pub fn new(client: ::kube::Client) -> Self {
                    Self { client }
                }
                /// The `kube::Client` underneath.
                pub fn client(&self) -> &::kube::Client {
                    &self.client
                }
                #(#accessors)*
            }

            impl From<Clientset> for ::kube::Client {
                fn from(clientset: Clientset) -> Self {
                    clientset.client
                }
            }
        });
    }
    if emit.informers {
        let decls = model.groups.iter().map(|g| {
            let gm = ident(&g.module);
            let gi = ident(&g.informers);
            let doc = format!(" Informers of the `{}` group.", g.group);
            quote! {
                #[doc = #doc]
                fn #gm(&self) -> self::#gm::#gi;
            }
        });
        let impls = model.groups.iter().map(|g| {
            let gm = ident(&g.module);
            let gi = ident(&g.informers);
            quote! {
                fn #gm(&self) -> self::#gm::#gi {
                    self::#gm::#gi::new(self)
                }
            }
        });
        out.extend(quote! {
            /// Typed informers of the generated kinds from the runtime's shared factory
            /// (informer-gen's factory accessors): `factory.<group>().<version>().<plural>()`.
            /// Any number of generated trees can share one factory; bring this trait into scope.
            pub trait InformerFactoryExt {
                #(#decls)*
            }

            impl InformerFactoryExt for ::kube_codegen_runtime::SharedInformerFactory {
                #(#impls)*
            }
        });
    }
    out
}

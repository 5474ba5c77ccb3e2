//! Lowers the WIT `error` once for thirteen exports instead of in each.
//! (`elector.step` still lowers its own: there it is a record's field.)
//!
//! wit-bindgen's export wrapper for each `func(..) -> result<T, error>`
//! lowers the whole `error` variant inline: 15 cases, ~25 strings, 2-3 KB
//! per function. Here twelve of them never return `Err` to their wrappers:
//! `component` keeps the error (`keep`) and returns a blank `T`, which is
//! cheap to lower and allocates nothing. Our wrapper around the generated
//! one then finds the kept error and calls `release`'s generated wrapper,
//! whose implementation returns it as `Err`, so it is lowered by generated
//! code, once. Every `result<T, error>` in the interface puts its payload
//! at offset 8 (its largest alignment is `u64`'s), so `release`'s lowering
//! is also theirs; its post-return frees the error's strings for them the
//! same way.
//!
//! `release` needs a client. The constructor and `elector.resign` have
//! none: for them a placeholder client (`Client::placeholder`) stands in
//! for the length of the call. The blank of the constructor and of
//! `client.elector` is a placeholder too, which becomes a resource before
//! the relay sees it; the relay drops that handle, so its destructor runs
//! before the error is returned.
//!
//! The export macro is pointed at this module tree (`with_types_in`); what
//! it does not override comes from the generated bindings unchanged.

// The module tree mirrors the generated one (`lease::lease`), and the
// macro passes the implementation type as `T`, which these functions know.
#![allow(
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    clippy::module_inception,
    clippy::extra_unused_type_parameters
)]

pub mod exports {
    pub mod s3_lease {
        pub mod lease {
            pub mod types {
                pub use crate::bindings::exports::s3_lease::lease::types::*;
            }
            pub mod lease {
                pub use crate::bindings::exports::s3_lease::lease::lease::*;

                use super::super::super::super::{has_kept, ClientImpl, ElectorImpl};
                use crate::bindings::exports::s3_lease::lease::lease as generated;
                use core::ptr::NonNull;

                /// When the call kept an error, writes it over `ret` (same
                /// return area) through `release`'s wrapper, `handle` being
                /// a client's.
                #[inline(never)]
                unsafe fn relay(handle: *mut u8, ret: *mut u8) -> *mut u8 {
                    if !has_kept() {
                        return ret;
                    }
                    // An empty lease: `release` returns the kept error before
                    // looking at it. Empty strings own no allocation.
                    let s = NonNull::<u8>::dangling().as_ptr();
                    unsafe {
                        generated::_export_method_client_release_cabi::<ClientImpl>(
                            handle, s, 0, 0, s, 0, s, 0, 0, 0, 0, s, 0, s, 0,
                        )
                    }
                }

                /// `relay` for a call that had no client: a placeholder
                /// stands in, as a resource's representation (`Option<T>`),
                /// at an address the generated code may take from a `u32`.
                #[inline(never)]
                unsafe fn relay_without_client(ret: *mut u8) -> *mut u8 {
                    if !has_kept() {
                        return ret;
                    }
                    let stand_in = Some(ClientImpl::placeholder());
                    let address = (&raw const stand_in).expose_provenance();
                    let handle = core::ptr::with_exposed_provenance_mut(address);
                    unsafe { relay(handle, ret) }
                }

                /// A kept constructor error comes with a placeholder client,
                /// already a resource whose handle is the `ok` payload:
                /// dropped here, then the error replaces it.
                pub unsafe fn _export_constructor_client_cabi<T>(args: *mut u8) -> *mut u8 {
                    unsafe {
                        let ret = generated::_export_constructor_client_cabi::<ClientImpl>(args);
                        if has_kept() {
                            let placeholder = *ret.add(8).cast::<u32>();
                            drop(Client::from_handle(placeholder));
                        }
                        relay_without_client(ret)
                    }
                }

                /// As the constructor's, the placeholder being an elector.
                pub unsafe fn _export_method_client_elector_cabi<T>(
                    a0: *mut u8,
                    a1: *mut u8,
                    a2: usize,
                    a3: i64,
                    a4: i64,
                    a5: i64,
                    a6: i32,
                    a7: *mut u8,
                    a8: usize,
                    a9: i32,
                    a10: *mut u8,
                    a11: usize,
                ) -> *mut u8 {
                    unsafe {
                        let ret = generated::_export_method_client_elector_cabi::<ClientImpl>(
                            a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11,
                        );
                        if has_kept() {
                            let placeholder = *ret.add(8).cast::<u32>();
                            drop(Elector::from_handle(placeholder));
                        }
                        relay(a0, ret)
                    }
                }

                pub unsafe fn _export_method_elector_resign_cabi<T>(handle: *mut u8) -> *mut u8 {
                    unsafe {
                        relay_without_client(generated::_export_method_elector_resign_cabi::<
                            ElectorImpl,
                        >(handle))
                    }
                }

                /// Post-return of a relayed call: on `Err`, `release`'s frees
                /// the error; on `Ok`, the function's own frees the value
                /// (reading the discriminant here lets the compiler drop the
                /// `Err` half of the latter).
                #[inline(always)]
                unsafe fn post_return(ret: *mut u8, ok: unsafe fn(*mut u8)) {
                    unsafe {
                        if *ret != 0 {
                            generated::__post_return_method_client_release::<ClientImpl>(ret)
                        } else {
                            ok(ret)
                        }
                    }
                }

                /// The handle is the first argument, at offset 0, when the
                /// arguments are passed in memory.
                unsafe fn handle_in(args: *mut u8) -> *mut u8 {
                    unsafe { core::ptr::with_exposed_provenance_mut(*args.cast::<u32>() as usize) }
                }

                /// The generated wrapper, then `relay`; and the post-return
                /// that matches. `args` passes the arguments in memory, the
                /// client's handle first; `flat` passes them as values,
                /// the handle being `a0`.
                macro_rules! relayed {
                    (args: $cabi:ident, $($post:tt)+) => {
                        pub unsafe fn $cabi<T>(args: *mut u8) -> *mut u8 {
                            unsafe {
                                let handle = handle_in(args);
                                relay(handle, generated::$cabi::<ClientImpl>(args))
                            }
                        }
                        relayed!(post: $($post)+);
                    };
                    (flat: $cabi:ident, $post:ident, $($a:ident: $t:ty),*) => {
                        pub unsafe fn $cabi<T>(a0: *mut u8, $($a: $t),*) -> *mut u8 {
                            unsafe { relay(a0, generated::$cabi::<ClientImpl>(a0, $($a),*)) }
                        }
                        relayed!(post: $post);
                    };
                    // An `Ok` that owns nothing: `release`'s post-return
                    // does it all (and the generated one is not linked).
                    (post: $post:ident as release) => {
                        pub unsafe fn $post<T>(ret: *mut u8) {
                            unsafe {
                                generated::__post_return_method_client_release::<ClientImpl>(ret)
                            }
                        }
                    };
                    (post: $post:ident) => {
                        pub unsafe fn $post<T>(ret: *mut u8) {
                            unsafe { post_return(ret, generated::$post::<ClientImpl>) }
                        }
                    };
                }

                relayed!(flat: _export_method_client_try_acquire_cabi,
                    __post_return_method_client_try_acquire,
                    a1: *mut u8, a2: usize, a3: i64, a4: i32, a5: *mut u8, a6: usize,
                    a7: i32, a8: *mut u8, a9: usize);
                relayed!(flat: _export_method_client_acquire_cabi,
                    __post_return_method_client_acquire,
                    a1: *mut u8, a2: usize, a3: i64, a4: i32, a5: *mut u8, a6: usize,
                    a7: i32, a8: *mut u8, a9: usize, a10: i64);
                relayed!(flat: _export_method_client_renew_cabi,
                    __post_return_method_client_renew,
                    a1: *mut u8, a2: usize, a3: i64, a4: *mut u8, a5: usize, a6: *mut u8,
                    a7: usize, a8: i64, a9: i64, a10: i64, a11: *mut u8, a12: usize,
                    a13: *mut u8, a14: usize);
                relayed!(flat: _export_method_client_inspect_cabi,
                    __post_return_method_client_inspect,
                    a1: *mut u8, a2: usize);
                relayed!(args: _export_method_client_fenced_put_cabi,
                    __post_return_method_client_fenced_put);
                relayed!(args: _export_method_client_fenced_put_with_cabi,
                    __post_return_method_client_fenced_put_with);
                relayed!(args: _export_method_client_fenced_delete_cabi,
                    __post_return_method_client_fenced_delete as release);
                relayed!(flat: _export_method_client_fenced_get_cabi,
                    __post_return_method_client_fenced_get,
                    a1: *mut u8, a2: usize);
                relayed!(flat: _export_method_client_preflight_cabi,
                    __post_return_method_client_preflight,);
                relayed!(post: __post_return_constructor_client as release);
                relayed!(post: __post_return_method_client_elector as release);
                relayed!(post: __post_return_method_elector_resign as release);
            }
        }
    }
}

use crate::bindings::exports::s3_lease::lease::types::Error;
use core::cell::Cell;

type ClientImpl = crate::component::Client;
type ElectorImpl = crate::component::ElectorResource;

/// The error of the export call in progress, from `keep` until the relay
/// hands it to `release` (within the same call).
struct KeptError(Cell<Option<Error>>);

// SAFETY: wasm32-wasip2 has no threads: an instance runs one call at a time.
unsafe impl Sync for KeptError {}

static KEPT: KeptError = KeptError(Cell::new(None));

pub(crate) fn keep(error: Error) {
    KEPT.0.set(Some(error));
}

pub(crate) fn take_kept() -> Option<Error> {
    KEPT.0.take()
}

fn has_kept() -> bool {
    let kept = KEPT.0.take();
    let has = kept.is_some();
    KEPT.0.set(kept);
    has
}

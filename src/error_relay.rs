//! Lowers the WIT `error` once for ten exports instead of in each: 21 KB smaller.
//!
//! wit-bindgen's export wrapper for each `func(..) -> result<T, error>`
//! lowers the whole `error` variant inline: 15 cases, ~25 strings, 2-3 KB
//! per function. Here nine of the client's methods never return `Err` to
//! their wrappers: `component::Client` keeps the error and returns a blank
//! `T`, which is cheap to lower and allocates nothing. Our wrapper around
//! the generated one then finds the kept error and calls `release`'s
//! generated wrapper, whose implementation returns it as `Err`, so it is
//! lowered by generated code, once. Every `result<T, error>` in the
//! interface puts its payload at offset 8 (its largest alignment is
//! `u64`'s), so `release`'s lowering is also theirs; its post-return frees
//! the error's strings for them the same way.
//!
//! The export macro is pointed at this module tree (`with_types_in`); what
//! it does not override comes from the generated bindings unchanged.

// The module tree mirrors the generated one (`lease::lease`), and the
// macro passes the implementation type, always `component::Client`, as `T`.
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

                use crate::bindings::exports::s3_lease::lease::lease as generated;
                use crate::component::Client as ClientImpl;
                use core::ptr::NonNull;

                /// When `client` kept an error, writes it over `ret` (same
                /// return area) through `release`'s wrapper.
                #[inline(never)]
                unsafe fn relay(handle: *mut u8, ret: *mut u8) -> *mut u8 {
                    // SAFETY: `handle` is the borrowed client the host passed in.
                    let client: &ClientImpl = unsafe { ClientBorrow::lift(handle).get() };
                    if !client.has_kept_error() {
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
                    (args: $cabi:ident, $post:ident) => {
                        pub unsafe fn $cabi<T>(args: *mut u8) -> *mut u8 {
                            unsafe {
                                let handle = handle_in(args);
                                relay(handle, generated::$cabi::<ClientImpl>(args))
                            }
                        }
                        relayed!(post: $post);
                    };
                    (flat: $cabi:ident, $post:ident, $($a:ident: $t:ty),*) => {
                        pub unsafe fn $cabi<T>(a0: *mut u8, $($a: $t),*) -> *mut u8 {
                            unsafe { relay(a0, generated::$cabi::<ClientImpl>(a0, $($a),*)) }
                        }
                        relayed!(post: $post);
                    };
                    (post: none) => {};
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
                // Its generated post-return already frees an error as
                // `release`'s does (the `Ok` side owns nothing).
                relayed!(args: _export_method_client_fenced_delete_cabi, none);
                relayed!(flat: _export_method_client_fenced_get_cabi,
                    __post_return_method_client_fenced_get,
                    a1: *mut u8, a2: usize);
                relayed!(flat: _export_method_client_preflight_cabi,
                    __post_return_method_client_preflight,);
            }
        }
    }
}

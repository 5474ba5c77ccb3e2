//! The generated bindings (wit-bindgen 0.63), private to this crate: an
//! inline world that imports the contract's interface and the environment,
//! read from the contract's directory (`generate_from_contract`). The rest
//! of the crate reaches them only through `convert`.

/// `wit_bindgen::generate!` over the contract: the crate's own `wit/` when
/// it is the published crate (a copy of the repository's `wit/`, made when
/// it is packed), the repository's `wit/` in the workspace; build.rs tells
/// which. `$dirs` are the directories under it.
macro_rules! generate_from_contract {
    ($inline:tt, [$($dir:tt),+], [$($repository_dir:tt),+]) => {
        #[cfg(not(s3lease_guest_repository_wit))]
        wit_bindgen::generate!({
            inline: $inline,
            path: [$($dir),+],
            world: "s3-lease:guest/guest",
            generate_all,
        });
        #[cfg(s3lease_guest_repository_wit)]
        wit_bindgen::generate!({
            inline: $inline,
            path: [$($repository_dir),+],
            world: "s3-lease:guest/guest",
            generate_all,
        });
    };
}

#[cfg(not(feature = "wasip3"))]
mod generated {
    generate_from_contract!(
        "
            package s3-lease:guest;
            world guest {
                import s3-lease:lease/lease@0.9.0;
                import wasi:cli/environment@0.2.12;
            }
        ",
        ["wit"],
        ["../wit"]
    );
}

/// With WASI 0.3.0 beside 0.2 in one resolve, wit-bindgen names the 0.3
/// packages' modules with their versions (`cli0_3_0`); the aliases below
/// give both builds the same paths.
#[cfg(feature = "wasip3")]
mod generated {
    generate_from_contract!(
        "
            package s3-lease:guest;
            world guest {
                import s3-lease:lease/async-lease@0.9.0;
                import wasi:cli/environment@0.3.0;
            }
        ",
        ["wit", "wit/p3"],
        ["../wit", "../wit/p3"]
    );
}

pub(crate) use generated::s3_lease::lease::types;

#[cfg(feature = "wasip3")]
pub(crate) use generated::s3_lease::lease::async_lease::{
    Client as RawClient, Elector as RawElector,
};
#[cfg(not(feature = "wasip3"))]
pub(crate) use generated::s3_lease::lease::lease::{Client as RawClient, Elector as RawElector};

#[cfg(not(feature = "wasip3"))]
pub(crate) use generated::wasi::cli::environment::get_environment;
#[cfg(feature = "wasip3")]
pub(crate) use generated::wasi::cli0_3_0::environment::get_environment;

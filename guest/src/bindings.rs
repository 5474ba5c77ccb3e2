//! The generated bindings (wit-bindgen 0.63), private to this crate: an
//! inline world that imports the contract's interface and the environment,
//! read from `wit/` (a link to the repository's contract; see Cargo.toml).
//! The rest of the crate reaches them only through `convert`.

#[cfg(not(feature = "wasip3"))]
mod generated {
    wit_bindgen::generate!({
        inline: "
            package s3-lease:guest;
            world guest {
                import s3-lease:lease/lease@0.9.0;
                import wasi:cli/environment@0.2.12;
            }
        ",
        path: "wit",
        world: "s3-lease:guest/guest",
        generate_all,
    });
}

/// With WASI 0.3.0 beside 0.2 in one resolve, wit-bindgen names the 0.3
/// packages' modules with their versions (`cli0_3_0`); the aliases below
/// give both builds the same paths.
#[cfg(feature = "wasip3")]
mod generated {
    wit_bindgen::generate!({
        inline: "
            package s3-lease:guest;
            world guest {
                import s3-lease:lease/async-lease@0.9.0;
                import wasi:cli/environment@0.3.0;
            }
        ",
        path: ["wit", "wit/p3"],
        world: "s3-lease:guest/guest",
        generate_all,
    });
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

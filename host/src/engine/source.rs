//! Where the component's bytes come from.

use anyhow::{Context, Result};
use std::path::PathBuf;

/// The component a [`crate::Runtime`] loads.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ComponentSource {
    /// The release component built into this library (when it was built
    /// before the host; see `build.rs`).
    Embedded,
    /// A `.wasm` component file.
    Path(PathBuf),
    /// Component bytes already in memory.
    Bytes(Vec<u8>),
}

#[cfg(s3lease_embedded)]
const EMBEDDED: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/s3_lease.wasm")));
#[cfg(not(s3lease_embedded))]
const EMBEDDED: Option<&[u8]> = None;
#[cfg(s3lease_embedded)]
const EMBEDDED_ORIGIN: Option<&str> = Some(env!("S3LEASE_EMBEDDED_ORIGIN"));
#[cfg(not(s3lease_embedded))]
const EMBEDDED_ORIGIN: Option<&str> = None;

impl ComponentSource {
    /// `S3LEASE_COMPONENT` if set, else the embedded component.
    pub fn from_env() -> Self {
        match std::env::var_os("S3LEASE_COMPONENT") {
            Some(path) => ComponentSource::Path(path.into()),
            None => ComponentSource::Embedded,
        }
    }

    /// Whether this library carries a component of its own.
    pub fn has_embedded() -> bool {
        EMBEDDED.is_some()
    }

    /// The component built into this library, if any: what `s3-lease
    /// version` reports, so a binary can be matched to a build.
    pub fn embedded_bytes() -> Option<&'static [u8]> {
        EMBEDDED
    }

    /// How the embedded component was made (`build.rs`): "given: PATH" when
    /// `S3LEASE_COMPONENT` named it at build time, else "built here, ...".
    pub fn embedded_origin() -> Option<&'static str> {
        EMBEDDED_ORIGIN
    }

    pub(crate) fn bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>> {
        Ok(match self {
            ComponentSource::Embedded => EMBEDDED
                .context(
                    "this build carries no s3-lease component: set S3LEASE_COMPONENT to a \
                     built one (cargo build -p s3-lease --lib --target wasm32-wasip2 --release)",
                )?
                .into(),
            ComponentSource::Path(path) => std::fs::read(path)
                .with_context(|| {
                    format!(
                        "reading the component {} (build it with: cargo build -p s3-lease \
                         --lib --target wasm32-wasip2 --release)",
                        path.display()
                    )
                })?
                .into(),
            ComponentSource::Bytes(bytes) => bytes.as_slice().into(),
        })
    }
}

//! SigV4 signing of the same requests (`s3_lease::testing::sigv4_cases`):
//! s3-lease's signer inside a wasm command in wasmtime, the same signer
//! native, and the AWS SDK's `aws-sigv4` crate native.

use anyhow::{bail, Context, Result};
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use s3_lease::testing::sigv4_cases::{self, Case, HOST, REGION, UNIX_SECONDS};
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Nanoseconds per signature, over `rounds` signatures.
pub struct Timing {
    pub in_component: Option<f64>,
    pub native: f64,
    pub aws_sigv4: f64,
}

pub fn time(wasm: &Path, rounds: usize) -> Result<Timing> {
    let in_component = if wasm.exists() {
        Some(in_component(wasm, rounds)?)
    } else {
        None
    };
    let cases = sigv4_cases::cases();
    let creds = sigv4_cases::credentials();
    let native = per_signature(rounds, |i| {
        sigv4_cases::sign(&cases[i % cases.len()], &creds).len()
    });
    let aws = AwsSigner::new();
    // The two signers must agree, or the comparison means nothing.
    for case in &cases {
        let ours = sigv4_cases::sign(case, &creds);
        let theirs = aws.sign(case)?;
        if ours != theirs {
            bail!(
                "aws-sigv4 and s3-lease disagree on {} {}:\n  {ours}\n  {theirs}",
                case.method,
                case.path
            );
        }
    }
    let aws_sigv4 = per_signature(rounds, |i| {
        aws.sign(&cases[i % cases.len()]).map_or(0, |s| s.len())
    });
    Ok(Timing {
        in_component,
        native,
        aws_sigv4,
    })
}

fn per_signature(rounds: usize, mut sign_one: impl FnMut(usize) -> usize) -> f64 {
    let mut checksum = 0;
    for i in 0..3 {
        checksum += sign_one(i);
    }
    let started = Instant::now();
    for i in 0..rounds {
        checksum += sign_one(i);
    }
    std::hint::black_box(checksum);
    started.elapsed().as_nanos() as f64 / rounds.max(1) as f64
}

struct Wasi {
    ctx: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    /// wasmtime's default hooks (the command sends no request).
    hooks: [(); 0],
}

/// The command links s3-lease's library, whose component imports wasi:http.
impl WasiHttpView for Wasi {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

impl WasiView for Wasi {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// Runs `benches/sigv4_timing.rs`, built for wasm32-wasip2, and reads its
/// nanoseconds per signature.
fn in_component(wasm: &Path, rounds: usize) -> Result<f64> {
    let engine = Engine::default();
    let component = Component::from_file(&engine, wasm).map_err(anyhow::Error::from)?;
    let mut linker: Linker<Wasi> = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(anyhow::Error::from)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)
        .map_err(anyhow::Error::from)?;
    let stdout = MemoryOutputPipe::new(4096);
    let ctx = WasiCtxBuilder::new()
        .args(&["sigv4-timing", &rounds.to_string()])
        .stdout(stdout.clone())
        .build();
    let mut store = Store::new(
        &engine,
        Wasi {
            ctx,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: [],
        },
    );
    let command =
        wasmtime_wasi::p2::bindings::sync::Command::instantiate(&mut store, &component, &linker)
            .map_err(anyhow::Error::from)?;
    command
        .wasi_cli_run()
        .call_run(&mut store)
        .map_err(anyhow::Error::from)?
        .map_err(|()| anyhow::anyhow!("sigv4-timing failed"))?;
    let out = String::from_utf8(stdout.contents().to_vec())?;
    out.split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .with_context(|| format!("sigv4-timing printed {out:?}"))
}

/// `aws-sigv4` set up as the AWS SDK signs S3: no path normalization, the
/// path encoded once, `x-amz-content-sha256` signed.
struct AwsSigner {
    identity: aws_smithy_runtime_api::client::identity::Identity,
}

impl AwsSigner {
    fn new() -> Self {
        let c = sigv4_cases::credentials();
        let credentials = aws_credential_types::Credentials::new(
            c.access_key_id,
            c.secret_access_key,
            c.session_token,
            None,
            "bench",
        );
        AwsSigner {
            identity: credentials.into(),
        }
    }

    /// The `authorization` value for `case`.
    fn sign(&self, case: &Case) -> Result<String> {
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&self.identity)
            .region(REGION)
            .name("s3")
            .time(UNIX_EPOCH + Duration::from_secs(UNIX_SECONDS))
            .settings(settings)
            .build()?
            .into();
        let query: Vec<String> = case
            .query
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    s3_lease::sigv4::uri_encode(k, true),
                    s3_lease::sigv4::uri_encode(v, true)
                )
            })
            .collect();
        let uri = if query.is_empty() {
            format!("https://{HOST}{}", case.path)
        } else {
            format!("https://{HOST}{}?{}", case.path, query.join("&"))
        };
        // x-amz-content-sha256 is added by the signer from the body's hash.
        let headers = case
            .headers
            .iter()
            .filter(|(name, _)| name != "x-amz-content-sha256")
            .map(|(n, v)| (n.as_str(), v.as_str()));
        let request = SignableRequest::new(
            case.method,
            uri,
            headers,
            SignableBody::Precomputed(case.payload_sha256_hex.clone()),
        )?;
        let (instructions, _) = sign(request, &params)?.into_parts();
        let authorization = instructions
            .headers()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.to_string());
        authorization.context("no authorization header")
    }
}

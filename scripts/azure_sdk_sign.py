#!/usr/bin/env python3
"""Sign requests with Microsoft's own Azure Storage Shared Key signer.

Reads a JSON array of requests on stdin, each {"account", "key" (base64),
"method", "url", "headers": [[name, value], ...]}, exactly as our component
would send them (its own Authorization left out), and prints a JSON array
of {"authorization", "string_to_sign"} in the same order, made by
azure-storage-blob's SharedKeyCredentialPolicy, the policy the Python SDK
signs every Shared Key request with.

`tests/shared_key_azure_sdk.rs` runs this and requires the Authorization
our `shared_key` module made for each request. Needs azure-storage-blob
(scripts/test.sh installs it in .venv).
"""

import json
import sys

try:
    from azure.core.pipeline import PipelineContext, PipelineRequest
    from azure.core.rest import HttpRequest
    from azure.storage.blob._shared import authentication
except ImportError as err:  # pragma: no cover - environment problem
    sys.stderr.write(
        f"azure-storage-blob is not importable ({err}); run scripts/test.sh to install the venv\n"
    )
    sys.exit(3)


class Recorded(authentication.SharedKeyCredentialPolicy):
    """The SDK's policy, keeping the string it signed."""

    def _add_authorization_header(self, request, string_to_sign):
        self.string_to_sign = string_to_sign
        super()._add_authorization_header(request, string_to_sign)


def sign(case):
    request = HttpRequest(case["method"], case["url"], headers=dict(case["headers"]))
    policy = Recorded(case["account"], case["key"])
    policy.on_request(PipelineRequest(request, PipelineContext(None)))
    return {
        "authorization": request.headers["Authorization"],
        "string_to_sign": policy.string_to_sign,
    }


def main():
    cases = json.load(sys.stdin)
    json.dump([sign(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()

"""credentials=: a botocore Session, and anything with get_credentials(),
asked again as its keys near their expiry."""

from __future__ import annotations

import datetime
import time
from typing import Any, Dict

import botocore.credentials
import botocore.session

import s3_lease


def settings(s3: Dict[str, Any], prefix: str) -> Dict[str, Any]:
    return dict(bucket=s3["bucket"], endpoint=s3["url"], key_prefix=prefix)


def test_a_botocore_session_signs(s3: Dict[str, Any], prefix: str) -> None:
    session = botocore.session.Session()
    session.set_credentials(s3["access_key_id"], s3["secret_access_key"])
    session.set_config_variable("region", s3["region"])
    with s3_lease.Client(credentials=session, **settings(s3, prefix)) as client:
        with client.lock("job", ttl=10) as lease:
            assert lease.held


def test_refreshable_credentials_are_asked_again_before_they_expire(s3: Dict[str, Any], prefix: str) -> None:
    asked = []

    def refresh() -> Dict[str, str]:
        asked.append(time.monotonic())
        expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=4)
        return {
            "access_key": s3["access_key_id"],
            "secret_key": s3["secret_access_key"],
            "token": "",
            "expiry_time": expires.isoformat(),
        }

    credentials = botocore.credentials.RefreshableCredentials.create_from_metadata(
        refresh(), refresh, "test-refresh"
    )

    class Session:  # anything with get_credentials()
        region_name = s3["region"]

        def get_credentials(self) -> Any:
            return credentials

    with s3_lease.Client(credentials=Session(), **settings(s3, prefix)) as client:
        before = len(asked)
        with client.lock("job", ttl=10) as lease:
            assert lease.held
            deadline = time.monotonic() + 10
            while len(asked) < before + 2 and time.monotonic() < deadline:
                time.sleep(0.1)
        assert len(asked) >= before + 2, asked
        assert client.stats()["credentials_error"] is None
        assert client.status("job") is not None


def test_a_session_without_credentials_is_a_config_error(s3: Dict[str, Any], prefix: str) -> None:
    class Empty:
        def get_credentials(self) -> None:
            return None

    try:
        s3_lease.Client(credentials=Empty(), **settings(s3, prefix))
    except s3_lease.ConfigError as e:
        assert "no AWS credentials" in str(e)
    else:
        raise AssertionError("connected without credentials")

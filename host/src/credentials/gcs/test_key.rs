//! A TEST-ONLY RSA key pair, made for these tests with
//! `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`. It is
//! no Google service account's and authorizes nothing anywhere: the fake
//! token endpoint checks signatures with its public half. Never use it
//! outside tests.

/// The test key's private half (PKCS#8 PEM, as a service-account key file
/// holds it).
pub(super) const TEST_PRIVATE_KEY: &str = "\
-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDGHW1nIc9xMqYC
L5k4scKjXgFjvHVB0Q2Pw5DJcAK/BplynznNZK7bez3N5LZtMrNn9W8Lq0pSxKwJ
/62M45IIUtU7Oj0sGWSGYQyOIRlaNmxvLCMW2U/foWwy0t2rVDIZssaxQJa7hCG+
ZlaAkd0mQeqkHe3r90Duiz1D1yPrv+qCV09jQ3AnNIEsFgji8y0j7eIkVn7MfFpQ
JXnuJHcELdfh/WBChqEi2OdbYyyXe36qQMLIZRlaoyDHB3tT54rftNpRLAKehlGF
51gBpLUHTGtV/Ggd7fTP8Dn40DGi3IZKmHXyTZhVE/WxDVt+SHiiyAyC/ZL2e75Y
8Q2sNPYpAgMBAAECggEAAXLGufW9iNCJoGOQhwN+36EcDnUwIlTC+M2KF1HXsn9A
Ehn3dtR0yWXiNFYNS009+H3xd1WF7XW+dG+GZRmJJJaI+KNTcULO3NiRWlAuu7c4
geLS73KCw0sOXgavYvJQYUBZYxSEHh7chUqsAWNRvJ9ygouLAKfvkyMjfUWYDqZ/
QNGsFsRUxPkF6qEHYAw0RNg3GGuIr/xZ8LNhAmvej7HCJ4BWBJ0SVxDz80NOL4Vw
DmEbFdg4qa961VmYIqr/kjXBdunM+rpWIRDkqpxT4cy4PVFTQjXdlRST93mLhJQ2
jNFHF+JZx7YByXqFHC1/8HRU5Rt/NQWXHEYLQsv0YQKBgQDlr77bCiJzqRjmwuDA
s14ADY9fsVjOEupMRcD9OVNAdXvaSsceTb34rUk4E2Biq+WGpmB6OgD++9I7p4in
1ZuT+7GbCtFymV/67wH0eBqHZjv6wyfc7OWG3YHhPMfPKRqTfEF0lXQUI88tVUz+
ldsol1JrcGfi7FhaN4UTgYsBUQKBgQDcz8AEMSa4PZD9RrYqcibbitvSMeVCV6Ur
ZCyXmZ939ZXQo/p3V/MZQERUDlroQVTGxM1zKKmYhx3F6XPKmW5PGhbH+n2QcPLV
06URBNYioBxFjxUH1Bx6qDDtsQvaTRcKalYplyNOiCxbRsaYAStlSBff8NjTX+gH
dG81jVExWQKBgBy0D8fTxmZp1WDRLcEnKTIcf7RXt19ZYcpSVUHP7iV6CRZIjgWt
dXYkQaguU7dBABgJprjfksxKsAUgdKV0vlKJ+7ICchY+MI5tW/MvJzGQhyJZTRwA
xtZJzDdXnyi2XEneF1f4bV8u8m8Z39tY4uB5uKUQkQr8ujXcBldfsv1hAoGAO6SJ
8xfro3xNu3vsHI702/wn4CDGEiNmY9ANE23VWyukqdSBBNdmvH1Vd3bhKzbqVT43
WFG1bZOhgSHLuv+ygf9EBAQvAmLf1M30GiK6TGP+/vLk9VZf0um3PZzC3NZR0Ohk
GZvPV5kEkisN3WUDebn9aOm/R2jyXYEfwNFJCxECgYB8I+HrLLdheiWGly0YmD7Y
7xQwrZGArdIerwrH5v3hpjWSxU+VgzgUiuU3YytmeASQ3JFiuQLsRN45wPsEz8Oc
ZyL26u9xzwDAmMTwtXl4NRDsQAgAQnvIUMPTHInoY6RF+WC1oEGERBD5yo9aq7TI
5W5UAXp3DF7dnQ5SpoovNg==
-----END PRIVATE KEY-----
";

/// The test key's public half (SubjectPublicKeyInfo PEM).
pub(super) const TEST_PUBLIC_KEY: &str = "\
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxh1tZyHPcTKmAi+ZOLHC
o14BY7x1QdENj8OQyXACvwaZcp85zWSu23s9zeS2bTKzZ/VvC6tKUsSsCf+tjOOS
CFLVOzo9LBlkhmEMjiEZWjZsbywjFtlP36FsMtLdq1QyGbLGsUCWu4QhvmZWgJHd
JkHqpB3t6/dA7os9Q9cj67/qgldPY0NwJzSBLBYI4vMtI+3iJFZ+zHxaUCV57iR3
BC3X4f1gQoahItjnW2Msl3t+qkDCyGUZWqMgxwd7U+eK37TaUSwCnoZRhedYAaS1
B0xrVfxoHe30z/A5+NAxotyGSph18k2YVRP1sQ1bfkh4osgMgv2S9nu+WPENrDT2
KQIDAQAB
-----END PUBLIC KEY-----
";

/// Another key's public half (its private half was thrown away): a
/// signature by the test key does not verify with it.
pub(super) const OTHER_PUBLIC_KEY: &str = "\
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu6/bhRAJx5s5DJxJzU5a
uKBYIq/He4XncPTUb5HJ0Z0PTzLJW6977e/3meBebFqhFFBMsJh50drzrUocMLsG
P1rUrxsNCrvhNqRl201td1+/9QDTw0H9m8doF0ZN06Tg2flfqRTsVBu1BWQylikd
QWmqTmxEVEzwWiy7sOyEwH8WCll3tv1UwTv5VuFkrMpMkwDcrDkHvd5TDdIUh46Q
EKHWZhFgalTNJBeOpU6r+RZMnSNSuy6SWQfV+ukojtQFsNWwmfbwgkZYer4Trzx9
jJVJ0UB/g9ojAhpcTWeifYVyNEFmKD9rUhdAnXOPg89/VMHSJwoCM0/WLDBd5XYS
jwIDAQAB
-----END PUBLIC KEY-----
";

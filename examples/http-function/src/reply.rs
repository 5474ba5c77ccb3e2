//! The function's HTTP replies: a status, headers and a JSON body, as plain
//! data. Each build's glue turns one into its WASI version's response.

use serde_json::json;

/// An HTTP reply with a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        let body = body.to_string().into_bytes();
        Reply {
            status,
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("content-length".into(), body.len().to_string().into_bytes()),
            ],
            body,
        }
    }

    pub fn error(status: u16, code: &str, message: &str) -> Reply {
        Reply::json(status, &json!({ "error": code, "message": message }))
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.as_bytes().to_vec()));
        self
    }
}

/// The counter an increment names, or the reply that refuses the request
/// (`route`'s refusals).
pub fn counter_name(route: crate::route::Route) -> Result<String, Reply> {
    use crate::route::Route;
    match route {
        Route::Increment { name } => Ok(name),
        Route::BadName(why) => Err(Reply::error(400, "bad-counter-name", why)),
        Route::MethodNotAllowed => {
            Err(Reply::error(405, "method-not-allowed", "POST only").header("allow", "POST"))
        }
        Route::NotFound => Err(Reply::error(
            404,
            "not-found",
            "the only route is POST /counters/{name}/increment",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::route;

    #[test]
    fn json_replies_say_their_length() {
        let reply = Reply::error(404, "not-found", "x");
        let length = reply
            .headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map(|(_, v)| String::from_utf8(v.clone()).unwrap());
        assert_eq!(length, Some(reply.body.len().to_string()));
    }

    #[test]
    fn refusals_match_routes() {
        let status = |post, path| counter_name(route(post, path)).map_err(|r| r.status);
        assert_eq!(status(true, "/counters/a/increment"), Ok("a".into()));
        assert_eq!(status(true, "/"), Err(404));
        assert_eq!(status(false, "/counters/a/increment"), Err(405));
        assert_eq!(status(true, "/counters/../increment"), Err(400));
        let allow = counter_name(route(false, "/counters/a/increment")).unwrap_err();
        assert!(allow.headers.contains(&("allow".into(), b"POST".to_vec())));
    }
}

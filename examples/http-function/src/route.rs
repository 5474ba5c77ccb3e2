//! Which request is which: the only route is `POST /counters/{name}/increment`.

/// What a request asks for, or how it is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Increment the named counter.
    Increment { name: String },
    /// 400: the path names a counter, but not a valid one.
    BadName(&'static str),
    /// 405: the right path, another method than POST.
    MethodNotAllowed,
    /// 404: any other path.
    NotFound,
}

/// Counter names: 1 to 64 of `A-Z a-z 0-9 . _ -`, not `.` or `..`. They
/// become part of S3 keys, so nothing that could climb or hide a path.
pub const MAX_NAME_LEN: usize = 64;

/// Routes a request by method and `path-with-query` (any query is ignored).
pub fn route(method_is_post: bool, path_with_query: &str) -> Route {
    let path = path_with_query
        .split_once('?')
        .map_or(path_with_query, |(p, _)| p);
    let Some(rest) = path.strip_prefix("/counters/") else {
        return Route::NotFound;
    };
    let Some(name) = rest.strip_suffix("/increment") else {
        return Route::NotFound;
    };
    if let Err(why) = check_name(name) {
        return Route::BadName(why);
    }
    if !method_is_post {
        return Route::MethodNotAllowed;
    }
    Route::Increment {
        name: name.to_string(),
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err("a counter name has 1 to 64 characters");
    }
    if name == "." || name == ".." {
        return Err("a counter name is not . or ..");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err("a counter name has only A-Z a-z 0-9 . _ -");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_increment_route() {
        assert_eq!(
            route(true, "/counters/page-views_2.x/increment"),
            Route::Increment {
                name: "page-views_2.x".into()
            }
        );
        assert_eq!(
            route(true, "/counters/a/increment?by=1"),
            Route::Increment { name: "a".into() }
        );
    }

    #[test]
    fn other_methods_are_refused_on_that_route_only() {
        assert_eq!(
            route(false, "/counters/a/increment"),
            Route::MethodNotAllowed
        );
        assert_eq!(route(false, "/nothing"), Route::NotFound);
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for path in [
            "",
            "/",
            "/counters",
            "/counters/",
            "/counters/a",
            "/counters/a/increment/",
            "/counters/a/decrement",
            "/x/counters/a/increment",
            "counters/a/increment",
        ] {
            assert_eq!(route(true, path), Route::NotFound, "{path:?}");
        }
    }

    #[test]
    fn bad_names_are_bad_requests() {
        let long = format!("/counters/{}/increment", "a".repeat(MAX_NAME_LEN + 1));
        for path in [
            "/counters//increment",
            "/counters/../increment",
            "/counters/./increment",
            "/counters/a/b/increment",
            "/counters/a%2Fb/increment",
            "/counters/é/increment",
            "/counters/a b/increment",
            long.as_str(),
        ] {
            assert!(matches!(route(true, path), Route::BadName(_)), "{path:?}");
        }
        let longest = format!("/counters/{}/increment", "a".repeat(MAX_NAME_LEN));
        assert!(matches!(route(true, &longest), Route::Increment { .. }));
    }
}

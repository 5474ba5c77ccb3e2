use super::*;

#[test]
fn dynamodb_calls_are_named_by_their_target() {
    let mut headers = http::HeaderMap::new();
    headers.insert("x-amz-target", "DynamoDB_20120810.PutItem".parse().unwrap());
    let uri: http::Uri = "http://d/".parse().unwrap();
    assert_eq!(operation(&http::Method::POST, &uri, &headers), "PutItem");
    headers.insert("x-amz-target", "Other.Thing".parse().unwrap());
    assert_eq!(operation(&http::Method::POST, &uri, &headers), "post");
}

#[test]
fn operations_are_named_from_method_and_query() {
    let get = http::Method::GET;
    let none = http::HeaderMap::new();
    let operation = |m: &http::Method, u: &http::Uri| operation(m, u, &none);
    assert_eq!(operation(&get, &"http://s/b/k".parse().unwrap()), "get");
    assert_eq!(
        operation(&get, &"http://s/b?list-type=2&prefix=p".parse().unwrap()),
        "list"
    );
    assert_eq!(
        operation(&http::Method::PUT, &"http://s/b/k".parse().unwrap()),
        "put"
    );
}

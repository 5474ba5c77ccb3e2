use super::*;

#[test]
fn an_elector_config_starts_at_client_go_defaults() {
    let c = ElectorConfig::new("leader");
    assert_eq!(c.key, "leader");
    assert_eq!(c.lease_duration, Duration::from_secs(15));
    assert_eq!(c.renew_deadline, Duration::from_secs(10));
    assert_eq!(c.retry_period, Duration::from_secs(2));
    assert_eq!((c.holder_id, c.metadata), (None, None));
}

#[test]
fn an_elector_config_takes_every_setter() {
    let c = ElectorConfig::new("k")
        .with_lease_duration(Duration::from_millis(900))
        .with_renew_deadline(Duration::from_millis(600))
        .with_retry_period(Duration::from_millis(100))
        .with_holder_id("node-1")
        .with_metadata("10.0.0.1:8080");
    assert_eq!(c.lease_duration, Duration::from_millis(900));
    assert_eq!(c.renew_deadline, Duration::from_millis(600));
    assert_eq!(c.retry_period, Duration::from_millis(100));
    assert_eq!(c.holder_id.as_deref(), Some("node-1"));
    assert_eq!(c.metadata.as_deref(), Some("10.0.0.1:8080"));
}

#[test]
fn a_step_names_its_leader_only_while_leading() {
    let step = |role| Step {
        role,
        events: Vec::new(),
        next_step_in: Duration::from_secs(2),
        leading_until: None,
        last_error: None,
    };
    assert!(step(Role::Candidate).leader().is_none());
    assert!(step(Role::Follower(None)).leader().is_none());
}

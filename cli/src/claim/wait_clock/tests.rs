use super::*;

#[test]
fn a_suspend_past_the_end_ends_the_wait_at_once() {
    let clock = Clock::for_tests();
    let wait = WaitClock::start(clock.clone(), Some(Duration::from_secs(10)));
    assert!(!wait.ran_out(wait.now()));
    assert!(wait.nap(Duration::from_secs(1), wait.now()) > Duration::ZERO);
    // The machine slept 11 s: std's clock saw nothing pass.
    clock.resume_after(Duration::from_secs(11));
    assert!(wait.ran_out(wait.now()));
    assert!(wait.waited() >= Duration::from_secs(11));
    assert_eq!(wait.nap(Duration::from_secs(1), wait.now()), Duration::ZERO);
}

#[test]
fn a_wait_too_long_to_count_never_ends_and_lines_come_on_time() {
    let clock = Clock::for_tests();
    let mut wait = WaitClock::start(clock.clone(), Some(Duration::MAX));
    assert!(!wait.line_due(wait.now()));
    clock.resume_after(Duration::from_secs(365 * 24 * 3600));
    assert!(!wait.ran_out(wait.now()));
    assert!(wait.line_due(wait.now()));
    assert!(!wait.line_due(wait.now()), "the next line is due later");
    let forever = WaitClock::start(clock, None);
    assert_eq!(
        forever.nap(Duration::from_secs(1), forever.now()),
        Duration::from_secs(1)
    );
}

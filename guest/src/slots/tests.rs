use super::*;

#[test]
fn slot_options_are_unfair_unless_asked() {
    assert_eq!(
        SlotOptions::limit(3),
        SlotOptions {
            limit: 3,
            fair: false
        }
    );
    assert!(SlotOptions::limit(3).fair().fair);
}

//! Unit tests of `numbers`.

use super::*;

#[test]
fn digits_and_words_are_numbers() {
    assert_eq!(
        numbers_in("-12 apples, 1,000 pears and 3.50 kg on 2024-01-05"),
        [1.0, 3.5, 5.0, 12.0, 1000.0, 2024.0]
    );
    assert_eq!(numbers_in("1,2,3"), [1.0, 2.0, 3.0]);
    assert_eq!(
        numbers_in("twenty-five, three hundred, a dozen, the third, half"),
        [0.5, 3.0, 5.0, 12.0, 20.0, 25.0, 100.0, 300.0]
    );
    assert!(numbers_in("no numbers here").is_empty());
}

//! The password file of Trino's file authenticator, made from the users Secret: one
//! `user:hash` line per user, with bcrypt hashes in the `$2y$` form Trino requires, at
//! a cost of at least [`MIN_BCRYPT_COST`] (Trino refuses less).
//!
//! A value of the Secret is a password, which is hashed here, or already a bcrypt hash
//! (`$2a$`, `$2b$` or `$2y$`), which is written as `$2y$` (the three differ only in
//! bugs of other implementations). Problems name the user, never the value.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use bcrypt::{HashParts, Version};

/// The least bcrypt cost Trino accepts.
pub const MIN_BCRYPT_COST: u32 = 8;
/// The cost the operator hashes passwords with: about 50 ms a password here.
pub const BCRYPT_COST: u32 = 10;
/// The prefixes of a value that is already a bcrypt hash.
const BCRYPT_PREFIXES: [&str; 3] = ["$2a$", "$2b$", "$2y$"];

/// Why an entry of the users Secret cannot be written. Each names the user only.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PasswordEntryProblem {
    /// A user name Trino's file could not hold, or one the operator keeps.
    #[error("the user name {0:?} is not valid: {1}")]
    InvalidUserName(String, &'static str),
    /// An empty value.
    #[error("the password of user {0:?} is empty")]
    EmptyPassword(String),
    /// A value that is not UTF-8 text.
    #[error("the password of user {0:?} is not UTF-8 text")]
    NotText(String),
    /// A bcrypt hash that does not parse.
    #[error("the value of user {0:?} starts like a bcrypt hash but is not one")]
    MalformedHash(String),
    /// A bcrypt hash cheaper than Trino accepts.
    #[error("the bcrypt hash of user {0:?} has cost {1}; Trino needs at least {MIN_BCRYPT_COST}")]
    WeakHash(String, u32),
    /// Hashing failed (no randomness).
    #[error("the password of user {0:?} could not be hashed: {1}")]
    Hashing(String, String),
}

/// The text of a password file. Its `Debug` shows the users, never a hash.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordFile(String);

impl PasswordFile {
    /// The file's text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The users, in file order.
    pub fn users(&self) -> Vec<&str> {
        self.0
            .lines()
            .filter_map(|line| line.split_once(':').map(|(user, _)| user))
            .collect()
    }
}

impl fmt::Debug for PasswordFile {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("PasswordFile")
            .field("users", &self.users())
            .finish_non_exhaustive()
    }
}

/// One line per user of `users` (user name to password or hash), sorted by user.
/// `reserved` are the user names the operator keeps for itself.
pub fn password_file(
    users: &BTreeMap<String, Vec<u8>>,
    reserved: &[&str],
) -> Result<PasswordFile, PasswordEntryProblem> {
    let mut text = String::new();
    for (user, value) in users {
        check_user_name(user, reserved)?;
        let value = std::str::from_utf8(value)
            .map_err(|_| PasswordEntryProblem::NotText(user.clone()))?
            .trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            return Err(PasswordEntryProblem::EmptyPassword(user.clone()));
        }
        let hash = if BCRYPT_PREFIXES
            .iter()
            .any(|prefix| value.starts_with(prefix))
        {
            let parts = HashParts::from_str(value)
                .map_err(|_| PasswordEntryProblem::MalformedHash(user.clone()))?;
            if parts.get_cost() < MIN_BCRYPT_COST {
                return Err(PasswordEntryProblem::WeakHash(
                    user.clone(),
                    parts.get_cost(),
                ));
            }
            parts.format_for_version(Version::TwoY)
        } else {
            hash_password(value)
                .map_err(|error| PasswordEntryProblem::Hashing(user.clone(), error))?
        };
        text.push_str(user);
        text.push(':');
        text.push_str(&hash);
        text.push('\n');
    }
    Ok(PasswordFile(text))
}

/// `password` hashed with a random salt at [`BCRYPT_COST`], in the `$2y$` form.
pub fn hash_password(password: &str) -> Result<String, String> {
    bcrypt::hash_with_result(password, BCRYPT_COST)
        .map(|parts| parts.format_for_version(Version::TwoY))
        .map_err(|error| error.to_string())
}

/// A user name must be a Secret key Trino can read back from the file: no `:` (the
/// separator) and no white space, and not the operator's own user.
fn check_user_name(user: &str, reserved: &[&str]) -> Result<(), PasswordEntryProblem> {
    let invalid = |why| Err(PasswordEntryProblem::InvalidUserName(user.to_owned(), why));
    if user.contains(':') {
        return invalid("a ':' separates the user from the hash in Trino's password file");
    }
    if user.chars().any(char::is_whitespace) {
        return invalid("it has white space");
    }
    if reserved.contains(&user) {
        return invalid(
            "it is one of the operator's own users (graceful-shutdown drains workers, \
             strata-metrics reads the metrics)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const RESERVED: &[&str] = &["graceful-shutdown", "strata-metrics"];

    fn users(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        entries
            .iter()
            .map(|(user, value)| ((*user).to_owned(), value.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn passwords_are_hashed_as_2y_and_verify() {
        let file = password_file(
            &users(&[("alice", "wonderland\n"), ("bob", "builder")]),
            RESERVED,
        )
        .expect("valid users");
        let lines: Vec<(&str, &str)> = file
            .text()
            .lines()
            .map(|line| line.split_once(':').expect("user:hash"))
            .collect();
        assert_eq!(file.users(), ["alice", "bob"]);
        for ((user, hash), password) in lines.iter().zip(["wonderland", "builder"]) {
            assert!(hash.starts_with("$2y$10$"), "{user}: {hash}");
            assert!(bcrypt::verify(password, hash).expect("a hash"), "{user}");
        }
        assert!(!format!("{file:?}").contains("$2y$"), "{file:?}");
    }

    #[test]
    fn a_bcrypt_hash_cheaper_than_trino_accepts_is_refused() {
        let weak = bcrypt::hash_with_result("secret", 4)
            .expect("hashed")
            .format_for_version(Version::TwoY);
        let problem = password_file(&users(&[("dave", &weak)]), RESERVED).expect_err("weak");
        assert_eq!(
            problem,
            PasswordEntryProblem::WeakHash("dave".to_owned(), 4)
        );
    }

    #[test]
    fn a_bcrypt_hash_is_kept_in_the_2y_form() {
        let hash = bcrypt::hash_with_result("secret", 8)
            .expect("hashed")
            .format_for_version(Version::TwoB);
        let file = password_file(&users(&[("carol", &hash)]), RESERVED).expect("valid");
        let written = file
            .text()
            .trim_end()
            .strip_prefix("carol:")
            .expect("carol");
        assert_eq!(written, hash.replacen("$2b$", "$2y$", 1));
        assert!(bcrypt::verify("secret", written).expect("a hash"));
    }

    #[rstest]
    #[case::colon_in_the_name("ali:ce", "pw", "\"ali:ce\" is not valid")]
    #[case::space_in_the_name("al ice", "pw", "\"al ice\" is not valid")]
    #[case::the_shutdown_user("graceful-shutdown", "pw", "the operator's own users")]
    #[case::the_metrics_user("strata-metrics", "pw", "the operator's own users")]
    #[case::empty_password("alice", "", "user \"alice\" is empty")]
    #[case::malformed_hash("alice", "$2y$10$tooshort", "user \"alice\" starts like a bcrypt")]
    fn invalid_entries_name_the_user_and_never_the_value(
        #[case] user: &str,
        #[case] value: &str,
        #[case] says: &str,
    ) {
        let problem = password_file(&users(&[(user, value)]), RESERVED).expect_err("refused");
        let message = problem.to_string();
        assert!(message.contains(says), "{message}");
        if !value.is_empty() {
            assert!(!message.contains(value), "{message}");
        }
    }
}

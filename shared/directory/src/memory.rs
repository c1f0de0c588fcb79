//! A directory in memory, for tests (a failing one wraps it): the Cognito adapter's contract.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::{DirectoryError, DirectoryUser, UserDirectory};

#[derive(Default)]
pub struct MemoryDirectory {
    users: Mutex<BTreeMap<String, (DirectoryUser, BTreeSet<String>)>>,
    /// Invitations sent (emails), in order.
    pub invited: Mutex<Vec<String>>,
}

impl MemoryDirectory {
    /// The user's groups.
    pub fn groups(&self, email: &str) -> Vec<String> {
        self.users
            .lock()
            .unwrap()
            .get(email)
            .map(|(_, g)| g.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl UserDirectory for MemoryDirectory {
    async fn find(&self, email: &str) -> Result<Option<DirectoryUser>, DirectoryError> {
        let found = self
            .users
            .lock()
            .unwrap()
            .get(email)
            .map(|(u, _)| u.clone());
        Ok(found)
    }

    async fn invite(&self, email: &str, vendor_id: &str) -> Result<DirectoryUser, DirectoryError> {
        let result = {
            let mut users = self.users.lock().unwrap();
            if users.contains_key(email) {
                Err(DirectoryError::AlreadyExists)
            } else {
                let user = DirectoryUser {
                    username: email.to_owned(),
                    user_id: format!("sub-{email}"),
                    email: email.to_owned(),
                    vendor_id: Some(vendor_id.to_owned()),
                    verified: true,
                };
                users.insert(email.to_owned(), (user.clone(), BTreeSet::new()));
                self.invited.lock().unwrap().push(email.to_owned());
                Ok(user)
            }
        };
        result
    }

    async fn set_vendor(&self, username: &str, vendor_id: &str) -> Result<(), DirectoryError> {
        let result = match self.users.lock().unwrap().get_mut(username) {
            Some((user, _)) => {
                user.vendor_id = Some(vendor_id.to_owned());
                Ok(())
            }
            None => Err(DirectoryError::Refused(
                format!("no user {username}").into(),
            )),
        };
        result
    }

    async fn add_to_group(&self, username: &str, group: &str) -> Result<(), DirectoryError> {
        let result = match self.users.lock().unwrap().get_mut(username) {
            Some((_, groups)) => {
                groups.insert(group.to_owned());
                Ok(())
            }
            None => Err(DirectoryError::Refused(
                format!("no user {username}").into(),
            )),
        };
        result
    }
}

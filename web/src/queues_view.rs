//! The Queues page's state: what the server's `GET …/queues` answered
//! (`classify_wasm::queue::board::QueuesPage`), or why there is nothing to
//! show. The page asks again whenever the stream's `queues` frame changes.

use classify_wasm::queue::board::{Bar, QueuesPage};

/// What the Queues page shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum QueuesView {
    #[default]
    Loading,
    Shown(QueuesPage),
    /// The answer was no page: the words say why.
    Failed(String),
}

impl QueuesView {
    /// The view of an answer's text.
    pub fn from_answer(text: &str) -> QueuesView {
        match QueuesPage::parse(text) {
            Ok(page) => QueuesView::Shown(page),
            Err(e) => QueuesView::Failed(format!("the server's answer was not a queues page: {e}")),
        }
    }

    /// Nothing to show but an empty namespace: no LocalQueue, and nothing
    /// withheld.
    pub fn is_empty(&self) -> bool {
        matches!(self, QueuesView::Shown(p) if p.local_queues.is_empty() && p.withheld.is_empty())
    }
}

/// A bar's three segments, in per mille of its track: reserved within the
/// nominal quota, borrowed beyond it, and where the nominal quota ends.
pub fn segments(bar: &Bar) -> (u32, u32, u32) {
    let own = bar.reserved_permille.saturating_sub(bar.borrowed_permille);
    (own, bar.borrowed_permille, bar.nominal_permille)
}

/// `n` per mille as a CSS width.
pub fn width(permille: u32) -> String {
    format!("{}.{}%", permille / 10, permille % 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::queue::board::cluster_queue_board;
    use serde_json::json;

    #[test]
    fn an_answer_is_a_page_or_says_why_not() {
        let text = r#"{"localQueues":[],"clusterQueues":[],"withheld":[]}"#;
        let view = QueuesView::from_answer(text);
        assert!(view.is_empty(), "{view:?}");
        let withheld =
            r#"{"localQueues":[],"clusterQueues":[],"withheld":["LocalQueues withheld"]}"#;
        assert!(!QueuesView::from_answer(withheld).is_empty());
        match QueuesView::from_answer("<html>") {
            QueuesView::Failed(why) => assert!(why.contains("not a queues page"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bar_draws_borrowing_apart_from_the_own_quota() {
        let cq = json!({"spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu",
                "nominalQuota": "64", "borrowingLimit": "16"}]}]}]},
            "status": {"flavorsReservation": [{"name": "a100", "resources": [
                {"name": "nvidia.com/gpu", "total": "72", "borrowed": "8"}]}]}});
        let board = cluster_queue_board("gpu-cq", &cq).expect("a board");
        let bar = &board.bars[0];
        // Of a scale of 80: 64 own (800‰), 8 borrowed (100‰), nominal at 800‰.
        assert_eq!(segments(bar), (800, 100, 800));
        assert_eq!(width(800), "80.0%");
        assert_eq!(width(5), "0.5%");
    }
}

//! The reviews through the real kube client and k8s-openapi's types: the
//! request and response shapes are those of a real API server.

mod common;

use common::*;
use emulator::{Emulator, Grant};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

async fn token_review(client: &kube::Client, token: &str) -> TokenReview {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: token.into(),
            audiences: None,
        },
        ..TokenReview::default()
    };
    Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("a TokenReview is answered")
}

async fn allowed(client: &kube::Client, user: &str, spec: SubjectAccessReviewSpec) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            ..spec
        },
        ..SubjectAccessReview::default()
    };
    Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("a SubjectAccessReview is answered")
        .status
        .expect("a status")
        .allowed
}

fn list(resource: &str, group: &str, namespace: &str) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        resource_attributes: Some(ResourceAttributes {
            verb: Some("list".into()),
            group: Some(group.into()),
            resource: Some(resource.into()),
            namespace: Some(namespace.into()),
            ..ResourceAttributes::default()
        }),
        ..SubjectAccessReviewSpec::default()
    }
}

#[tokio::test]
async fn the_kube_client_reviews_tokens_and_access() {
    let emu = Emulator::new(config(false));
    emu.set_user("alice-token", "alice", &["team-a"]);
    let grant = Grant::namespaced("alice", "list", "", "pods", "team-a");
    emu.grant(grant.clone());
    emu.grant(Grant::non_resource("team-a", "get", "/metrics"));
    let (_server, client) = serve(&emu).await;

    let status = token_review(&client, "alice-token")
        .await
        .status
        .expect("status");
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.expect("user");
    assert_eq!(user.username.as_deref(), Some("alice"));
    assert!(user
        .groups
        .unwrap_or_default()
        .contains(&"team-a".to_string()));
    let status = token_review(&client, "nobody")
        .await
        .status
        .expect("status");
    assert_eq!(status.authenticated, Some(false));

    assert!(allowed(&client, "alice", list("pods", "", "team-a")).await);
    assert!(!allowed(&client, "alice", list("pods", "", "team-b")).await);
    let metrics = SubjectAccessReviewSpec {
        groups: Some(vec!["team-a".into()]),
        non_resource_attributes: Some(NonResourceAttributes {
            verb: Some("get".into()),
            path: Some("/metrics".into()),
        }),
        ..SubjectAccessReviewSpec::default()
    };
    assert!(
        allowed(&client, "alice", metrics).await,
        "through her group"
    );
    emu.revoke(&grant);
    assert!(!allowed(&client, "alice", list("pods", "", "team-a")).await);

    let own = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("create".into()),
                group: Some("authentication.k8s.io".into()),
                resource: Some("tokenreviews".into()),
                ..ResourceAttributes::default()
            }),
            non_resource_attributes: None,
        },
        ..SelfSubjectAccessReview::default()
    };
    let api = Api::<SelfSubjectAccessReview>::all(client.clone());
    let answer = api
        .create(&PostParams::default(), &own)
        .await
        .expect("answered");
    assert!(answer.status.expect("status").allowed);
    emu.forbid("tokenreviews");
    let answer = api
        .create(&PostParams::default(), &own)
        .await
        .expect("answered");
    assert!(
        !answer.status.expect("status").allowed,
        "without the delegation"
    );
    let refused = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &TokenReview::default())
        .await;
    assert!(
        matches!(refused, Err(kube::Error::Api(ref e)) if e.code == 403),
        "{refused:?}"
    );
    assert_eq!(emu.reviews("tokenreviews"), 2);
    assert_eq!(emu.reviews("subjectaccessreviews"), 4);
}

#[tokio::test]
async fn discovery_lists_the_review_groups_and_nothing_is_stored() {
    let emu = Emulator::new(config(false));
    let (server, client) = serve(&emu).await;
    let rv = emu.resource_version();
    token_review(&client, "x").await;
    assert_eq!(emu.resource_version(), rv, "a review persists nothing");
    let (code, body) = get(server.addr(), "/apis/authorization.k8s.io/v1").await;
    assert_eq!(code, 200);
    assert!(body.contains("\"subjectaccessreviews\""), "{body}");
    let (code, body) = get(server.addr(), "/apis").await;
    assert_eq!(code, 200);
    assert!(body.contains("\"authentication.k8s.io\""), "{body}");
    let (code, _) = get(server.addr(), "/apis/authentication.k8s.io/v1/tokenreviews").await;
    assert_eq!(code, 405, "reviews are only created");
}

//! Label and field selectors and pagination on list.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use rstest::rstest;
use strata_test_apiserver::TestApiServer;

use crate::support::{api_error, config_map, server};

async fn seeded() -> anyhow::Result<(TestApiServer, Api<ConfigMap>)> {
    let server = server();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let objects: [(&str, &[(&str, &str)]); 4] = [
        ("web-a", &[("app", "web"), ("tier", "front")]),
        ("web-b", &[("app", "web"), ("tier", "back")]),
        (
            "db",
            &[("app", "db"), ("tier", "back"), ("critical", "yes")],
        ),
        ("plain", &[]),
    ];
    for (name, labels) in objects {
        api.create(&PostParams::default(), &config_map(name, &[], labels))
            .await?;
    }
    Ok((server, api))
}

fn names(list: &kube::api::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect()
}

#[rstest]
#[case::equality("app=web", &["web-a", "web-b"])]
#[case::double_equality("app==db", &["db"])]
#[case::inequality_includes_unlabelled("app!=web", &["db", "plain"])]
#[case::set_in("tier in (front,back)", &["db", "web-a", "web-b"])]
#[case::set_notin_includes_unlabelled("tier notin (back)", &["plain", "web-a"])]
#[case::exists("critical", &["db"])]
#[case::does_not_exist("!app", &["plain"])]
#[case::conjunction("app=web,tier=back", &["web-b"])]
#[case::set_and_exists("app in (web,db),!critical", &["web-a", "web-b"])]
#[tokio::test]
async fn label_selector_selects(
    #[case] selector: &str,
    #[case] expected: &[&str],
) -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let list = api.list(&ListParams::default().labels(selector)).await?;
    assert_eq!(names(&list), expected);
    Ok(())
}

#[rstest]
#[case::by_name("metadata.name=db", &["db"])]
#[case::by_name_negated("metadata.name!=db", &["plain", "web-a", "web-b"])]
#[case::by_namespace("metadata.namespace=default", &["db", "plain", "web-a", "web-b"])]
#[case::other_namespace("metadata.namespace=other", &[])]
#[tokio::test]
async fn field_selector_selects(
    #[case] selector: &str,
    #[case] expected: &[&str],
) -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let list = api.list(&ListParams::default().fields(selector)).await?;
    assert_eq!(names(&list), expected);
    Ok(())
}

#[tokio::test]
async fn malformed_selector_is_400() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let result = api
        .list(&ListParams::default().labels("tier in front"))
        .await;
    assert_eq!(api_error(result), Some((400, "BadRequest".into())));
    Ok(())
}

#[tokio::test]
async fn limit_and_continue_page_through_everything() -> anyhow::Result<()> {
    let (_server, api) = seeded().await?;
    let first = api.list(&ListParams::default().limit(3)).await?;
    assert_eq!(names(&first), ["db", "plain", "web-a"]);
    assert_eq!(first.metadata.remaining_item_count, Some(1));
    let token = first.metadata.continue_.clone().unwrap_or_default();
    let second = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await?;
    assert_eq!(names(&second), ["web-b"]);
    assert_eq!(second.metadata.continue_, None);
    Ok(())
}

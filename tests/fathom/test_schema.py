def test_the_openapi_schema_describes_the_api(client, db):
    response = client.get("/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "Fathom API"
    assert {"/v1/health", "/v1/workspace", "/v1/apikeys"} <= set(schema["paths"])


def test_the_docs_page_uses_assets_served_locally(client, db):
    response = client.get("/v1/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page and "cdn.jsdelivr.net" not in page
    asset = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css")
    assert asset.status_code == 200

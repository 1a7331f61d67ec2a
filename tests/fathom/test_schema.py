import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator

from fathom.services import apikey_create
from harness.runtime import profiles


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


def generated_schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_generates_without_a_single_warning():
    GENERATOR_STATS.reset()
    generated_schema()
    assert not GENERATOR_STATS, f"warnings: {dict(GENERATOR_STATS._warn_cache)} errors: {dict(GENERATOR_STATS._error_cache)}"


def test_every_operation_declares_the_bearer_key_and_its_errors_with_the_envelope():
    schema = generated_schema()
    assert schema["components"]["securitySchemes"]["BearerKey"] == {"type": "http", "scheme": "bearer"}
    envelope = {"$ref": "#/components/schemas/Error"}
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            where = f"{method.upper()} {path}"
            for code in ("400", "404"):
                assert operation["responses"][code]["content"]["application/json"]["schema"] == envelope, where
            if path not in ("/v1/health", "/v1/schema/", "/v1/docs/"):
                assert {"BearerKey": []} in operation["security"], where
                assert {"401", "403"} <= set(operation["responses"]), where
            if "requestBody" in operation:
                assert {"413", "415"} <= set(operation["responses"]), where


def test_every_response_body_is_typed():
    schema = generated_schema()
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            for code, response in operation["responses"].items():
                for media_type, content in response.get("content", {}).items():
                    assert content["schema"] != {"type": "object", "additionalProperties": {}}, (
                        f"{method.upper()} {path} {code} {media_type}")


def component_of(schema: dict, reference: dict) -> dict:
    return schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[-1]]


@pytest.fixture
def path_values(workspace, api_client_for):
    """A value for every path parameter, naming an object that exists where one is needed."""
    owner = api_client_for(workspace, "owner")
    session = owner.post("/v1/sessions", {}, format="json").json()["id"]
    profiles.agent_profile_create(workspace=workspace, slug="scout")
    profiles.user_profile_create(workspace=workspace, slug="ada")
    return owner, {"session_id": session, "slug": "scout", "proposal_id": 1, "conflict_id": 1,
                   "key_id": apikey_create(workspace=workspace, role="viewer").key.pk, "run_id": 1,
                   "fire_id": "0" * 32, "delta_id": "0" * 16,
                   "name": "topical", "role": "main"}


def test_each_documented_request_body_is_the_one_its_view_accepts(path_values):
    """An empty object names the view's required fields (400, keyed by field) or passes validation;
    either way they must be the fields the schema says are required, and fields the schema knows."""
    owner, values = path_values
    schema = generated_schema()
    checked = 0
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            component = component_of(schema, body["schema"])
            if "oneOf" in component:  # one object or a list of them: the object is what is checked
                component = component_of(schema, component["oneOf"][0])
            url = path.format(**{**values, "slug": "ada" if "users" in path else "scout"})
            response = getattr(owner, method)(url, {}, format="json")
            refused = set()
            if response.status_code == 400:
                details = response.json()["error"]["details"]
                if "field" in details:  # a domain rule (content or media_hash, say): it names one field
                    assert details["field"] in component["properties"], (method, path, details)
                else:
                    assert set(details) <= set(component["properties"]), (method, path, details)
                    refused = {field for field, errors in details.items() if "This field is required." in errors}
            assert refused == set(component.get("required", [])), (method, path, response.status_code,
                                                                   response.content[:300])
            checked += 1
    assert checked >= 15

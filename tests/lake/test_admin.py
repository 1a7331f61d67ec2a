def test_admin_finds_deltas_by_tag_and_by_content_and_edits_nothing(admin_client, moments):
    (note,) = moments("the lighthouse keeper's log", tags=["kind:note"])
    (task,) = moments("replace the lamp", tags=["kind:task"])

    by_tag = admin_client.get("/admin/lake/delta/", {"q": "tag:kind:task"}).content.decode()
    by_content = admin_client.get("/admin/lake/delta/", {"q": "lighthouse"}).content.decode()

    assert task.id in by_tag and note.id not in by_tag
    assert note.id in by_content and task.id not in by_content
    page = admin_client.get(f"/admin/lake/delta/{note.id}/change/").content.decode()
    assert "the lighthouse keeper" in page and 'name="content"' not in page
    assert admin_client.get("/admin/lake/delta/add/").status_code == 403

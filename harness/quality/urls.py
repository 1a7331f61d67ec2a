"""The quality app's REST endpoints, mounted under /v1/."""

from django.urls import path

from harness.quality import api

urlpatterns = [
    path("fires/<str:fire_id>/feedback", api.FireFeedbackView.as_view(), name="fire-feedback"),
    path("quality/settings", api.QualitySettingsView.as_view(), name="quality-settings"),
    path("quality/feedback", api.FeedbackListView.as_view(), name="quality-feedback"),
    path("quality/calibration", api.CalibrationView.as_view(), name="quality-calibration"),
]

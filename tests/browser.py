"""The `browser` fixture (headless Chromium through the system's chromedriver) and the steps the
browser tests share. Loaded as a plugin by tests/conftest.py, which marks the tests that use it
`browser` (left out by `make test-fast`)."""

import shutil
import tempfile

import pytest
from django.contrib.auth.models import User
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = "chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


@pytest.fixture
def browser():
    """Headless Chromium through the system's chromedriver. Nothing is downloaded: a missing browser
    fails the test with what to install (CI's .ci/run installs them)."""
    binary = next((path for name in CHROMIUM if (path := shutil.which(name))), None)
    driver_path = shutil.which(CHROMEDRIVER)
    if binary is None or driver_path is None:
        pytest.fail("headless Chromium is needed: apt-get install -y chromium chromium-driver "
                    f"(found browser={binary}, driver={driver_path})")
    profile = tempfile.mkdtemp(prefix="fathom-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def operator_logs_in(browser, live_server, next_path: str) -> None:
    """A superuser operator is created and logs into admin, landing on `next_path`."""
    User.objects.create_superuser("operator@example.com", "operator@example.com", "a long passphrase")
    browser.get(f"{live_server.url}/admin/login/?next={next_path}")
    browser.find_element(By.NAME, "username").send_keys("operator@example.com")
    browser.find_element(By.NAME, "password").send_keys("a long passphrase")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()

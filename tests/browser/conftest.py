"""Headless Chromium (Debian chromium + chromedriver through Selenium) against pytest-django's live server.

Screenshots of every step go to test-artifacts/browser/ (git-ignored), one PNG per step.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.workers.conftest import celery_worker_process, wait_for  # noqa: F401  (re-exported fixture)

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
WINDOW_SIZE = "1366,1000"
WAIT_SECONDS = 20
MAX_SCREENSHOT_HEIGHT = 4000


def chromium_paths() -> tuple[str, str]:
    """(browser, driver) executables, or skip the browser tests saying what to install."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("headless Chromium is missing: run scripts/browser.sh (Debian chromium and chromium-driver)")
    return browser, driver


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def downloads(tmp_path) -> Path:
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def browser(downloads):
    """A fresh headless Chromium per test (own cookies), saving downloads into `downloads`."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="install selenium (the test extras)")
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    # --no-sandbox: CI and this machine run as root, where Chromium's own sandbox refuses to start.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WINDOW_SIZE}", "--lang=en-US"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shoot(browser, artifacts, request):
    """shoot("step") saves a PNG of the whole page (up to 4000 px high) named after the test and the step."""
    width, height = (int(size) for size in WINDOW_SIZE.split(","))

    def save(step: str) -> Path:
        path = artifacts / f"{request.node.name}--{step}.png"
        # The window's own bars take outerHeight - innerHeight pixels of its height.
        page_height = browser.execute_script(
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
            " + window.outerHeight - window.innerHeight")
        browser.set_window_size(width, max(height, min(page_height, MAX_SCREENSHOT_HEIGHT)))
        try:
            browser.save_screenshot(str(path))
        finally:
            browser.set_window_size(width, height)
        return path

    return save


def wait_until(browser, condition, what: str, timeout: float = WAIT_SECONDS):
    """Wait for a Selenium condition, failing with what was awaited and the page's address."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(browser, timeout, poll_frequency=0.2).until(condition)
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout}s waiting for {what} on {browser.current_url}") from None


def text_of(browser, css: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, css).text


def log_in(browser, base_url: str, username: str, password: str) -> None:
    """Fill the login form and wait for the home page."""
    from selenium.webdriver.common.by import By

    browser.get(f"{base_url}/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait_until(browser, lambda driver: "/login/" not in driver.current_url, "the login to finish")

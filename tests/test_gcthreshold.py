"""The cycle collector's threshold while the engine runs (crawl/extensions/gcthreshold.py)."""

import gc

import pytest
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from tse_scrapy import settings as tse_settings
from tse_scrapy.crawl.extensions.gcthreshold import GcThreshold


def test_the_threshold_is_raised_from_engine_start_to_stop_then_put_back():
    before = gc.get_threshold()
    crawler = get_crawler(settings_dict={"TSE_GC_THRESHOLD": tse_settings.TSE_GC_THRESHOLD})
    extension = GcThreshold.from_crawler(crawler)  # signals hold their receivers weakly
    try:
        crawler.signals.send_catch_log(signals.engine_started)
        assert gc.get_threshold() == (10000, *before[1:])
    finally:
        crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before
    assert extension.threshold == 10000


@pytest.mark.parametrize("threshold", [0, -1])
def test_no_threshold_keeps_pythons(threshold):
    with pytest.raises(NotConfigured):
        GcThreshold.from_crawler(get_crawler(settings_dict={"TSE_GC_THRESHOLD": threshold}))

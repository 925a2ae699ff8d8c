"""What sluice check says of a MySQL source's GTIDs: the tags of its executed set, by name."""

from __future__ import annotations

from sluice.source.mysql_settings import _gtids

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_the_tags_of_the_executed_set_are_named():
    level, subject, text = _gtids({"gtid_mode": "ON", "gtid_executed": f"{UUID}:1-9:etl:1-3:audit:4"})
    assert (level, subject) == ("ok", "source.gtid")
    assert text == (
        "gtid_mode=ON: the pipeline resumes by the GTID set it committed; its tagged transactions (audit, etl) are "
        "read and resumed from like the others"
    )

"""The notebooks' check helper tells right, wrong and not-yet apart, and says where bytes differ."""

from simplekafka.learn.try_it import NOT_YET, RIGHT, WRONG, check


def test_right_answer(capsys):
    check("the answer", 42, 42)
    assert capsys.readouterr().out.startswith(RIGHT)


def test_not_tried_yet(capsys):
    check("the answer", None, 42)
    assert capsys.readouterr().out.startswith(NOT_YET)


def test_wrong_bytes_name_the_first_wrong_byte(capsys):
    check("frame", b"\x00\x00\x00\x05", b"\x00\x00\x00\x04")
    out = capsys.readouterr().out
    assert out.startswith(WRONG)
    assert "offset 3: expected 0x04, got 0x05" in out


def test_short_bytes_say_they_end_early(capsys):
    check("frame", b"\x00\x00", b"\x00\x00\x00\x04")
    assert "offset 2: expected 0x00, got (the end)" in capsys.readouterr().out


def test_wrong_list_names_the_first_wrong_item(capsys):
    check("assignment", [0, 2, 1], [0, 1, 2])
    assert "index 1: expected 1, got 2" in capsys.readouterr().out

"""quantize --model that is not a directory: called missing (or not a directory), before anything looks inside it."""

import pytest

from specdraft.cli import main


@pytest.mark.parametrize("model, said", [("./nodir", "--model ./nodir does not exist"),
                                         ("a-file", "--model a-file is not a directory")])
def test_a_missing_model_directory_is_called_missing_not_a_checkpoint_without_a_tokenizer(tmp_path, monkeypatch,
                                                                                          capsys, model, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    code = main(["quantize", "--model", model, "--out", "out", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and said in err
    assert "tokenizer" not in err and "hf download" not in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, said", [
    (["--model", "./empty"], "specdraft: error: ./empty has no tokenizer, so calibration text cannot be tokenized"),
    (["--model", "./empty", "--calib", "random-tokens"], "specdraft: error: ./empty has no config.json"),
    (["--model", "./empty", "--calib", "./samples.txt"], "specdraft: error: calibration file ./samples.txt does not exist"),
    (["--model", "./empty", "--out", "./kept"], "specdraft: error: ./kept exists and is not an empty directory"),
    (["--model", "./empty", "--out", "./a-file/out"], "specdraft: error: cannot create ./a-file/out: a-file is not a "
                                                       "writable directory"),
], ids=["model without a tokenizer", "model without a config", "missing calibration file", "non-empty out",
        "out under a file"])
def test_messages_name_each_path_as_typed(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("mine")
    (tmp_path / "a-file").write_text("x")
    code = main(["quantize", "--out", "./out", *argv, "--dry-run"])
    assert code == 2 and capsys.readouterr().err.splitlines()[0] == said

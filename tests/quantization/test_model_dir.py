"""quantize --model that is not a directory: called missing (or not a directory), before anything looks inside it."""

import pytest

from specdraft.cli import main


@pytest.mark.parametrize("model, said", [("./nodir", "--model nodir does not exist"),
                                         ("a-file", "--model a-file is not a directory")])
def test_a_missing_model_directory_is_called_missing_not_a_checkpoint_without_a_tokenizer(tmp_path, monkeypatch,
                                                                                          capsys, model, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    code = main(["quantize", "--model", model, "--out", "out", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and said in err
    assert "tokenizer" not in err and "hf download" not in err and not (tmp_path / "out").exists()

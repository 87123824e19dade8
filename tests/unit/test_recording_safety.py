"""Free-side stacks break non-reentrant activation checkpointing (docs/capture-format.md, "Recording
settings"): a script that checkpoints is recorded without them even when they are asked for."""

from vramlens.agent.recording_safety import free_stacks_refusal, script_uses_checkpointing


def test_checkpointing_scripts_are_recognised(tmp_path):
    cases = {
        "model.gradient_checkpointing_enable()\n": True,
        "from torch.utils.checkpoint import checkpoint\n": True,
        "h = checkpoint(block, h, use_reentrant=False)\n": True,
        "args = TrainingArguments(gradient_checkpointing=True)\n": True,
        "torch.save(model.state_dict(), 'checkpoint.pt')\n": False,  # saving a checkpoint file is not it
        "load_checkpoint = 1\n": False,
    }
    for number, (source, expected) in enumerate(cases.items()):
        path = tmp_path / f"s{number}.py"
        path.write_text(source)
        assert script_uses_checkpointing(str(path)) is expected, source
        assert (free_stacks_refusal(str(path)) is not None) is expected
    assert not script_uses_checkpointing(str(tmp_path / "missing.py"))

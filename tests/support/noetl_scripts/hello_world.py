# Stand-in for the script NoETL's fixture `script_execution/python_file_example.yaml` loads
# (`scripts/hello_world.py`, which NoETL's fixture set does not ship): written here from what
# the fixture's verify step checks. tests/dsl/e2e_needs.py passes its path as `script_path`.


def main(name, count):
    messages = [f"Hello, {name}! ({i + 1})" for i in range(int(count))]
    return {"status": "success", "total_greetings": len(messages), "script_source": "file",
            "messages": messages}
